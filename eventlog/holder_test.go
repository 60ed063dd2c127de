package eventlog

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gofrs/flock"
)

func TestFlockHolder(t *testing.T) {
	const locks = `1: POSIX  ADVISORY  WRITE 100 fd:01:77 0 EOF
2: FLOCK  ADVISORY  WRITE 200 08:02:77 0 EOF
3: -> FLOCK  ADVISORY  WRITE 300 fd:01:77 0 EOF
4: FLOCK  ADVISORY  WRITE 400 fd:01:770 0 EOF
5: FLOCK  ADVISORY  WRITE 500 fd:01:77 0 EOF
6: FLOCK  ADVISORY  WRITE 600 103:105:77 0 EOF
7: FLOCK  ADVISORY  WRITE -1 00:2a:77 0 EOF
`
	cases := []struct {
		name     string
		dev, ino uint64
		pid      int
		ok       bool
	}{
		// Not the POSIX lock, not the waiter, not inode 77 of device 08:02.
		{"held", mkdev(0xfd, 0x01), 77, 500, true},
		{"same inode, other device", mkdev(8, 2), 77, 200, true},
		{"major and minor over 0xff", mkdev(0x103, 0x105), 77, 600, true},
		{"pid in another namespace", mkdev(0, 0x2a), 77, 0, true},
		{"free", mkdev(0xfd, 0x01), 78, 0, false},
		{"inode held on no such device", mkdev(8, 3), 77, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pid, ok := flockHolder(strings.NewReader(locks), c.dev, c.ino)
			if pid != c.pid || ok != c.ok {
				t.Fatalf("flockHolder(%#x, %d) = %d, %v; want %d, %v", c.dev, c.ino, pid, ok, c.pid, c.ok)
			}
		})
	}
}

// mkdev encodes a device number as Linux's stat gives it (glibc's makedev).
func mkdev(major, minor uint64) uint64 {
	return minor&0xff | (major&0xfff)<<8 | (minor&^0xff)<<12 | (major&^0xfff)<<32
}

func TestDevMajorMinor(t *testing.T) {
	for _, c := range [][2]uint64{{0, 0}, {8, 1}, {0xfe, 0}, {0x103, 0x105}, {0xfff, 0xff}, {0x1234, 0x56789}, {1<<32 - 1, 1<<32 - 1}} {
		dev := mkdev(c[0], c[1])
		if devMajor(dev) != c[0] || devMinor(dev) != c[1] {
			t.Errorf("%#x:%#x encoded as %#x decodes to %#x:%#x", c[0], c[1], dev, devMajor(dev), devMinor(dev))
		}
	}
	if mkdev(0xfe, 0) != 65024 { // this project's VM: / on /dev/vda, 0xfe:0x00 in /proc/locks
		t.Fatal("mkdev is not the kernel's encoding")
	}
}

func TestLockHolder(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	if _, _, ok := l.LockHolder(); ok {
		t.Fatal("a holder of a free lock")
	}
	holder := flock.New(l.LockPath())
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("hold the lock: %v %v", ok, err)
	}
	defer holder.Unlock()
	pid, cmd, ok := l.LockHolder()
	if !ok || pid != syscall.Getpid() || cmd == "" {
		t.Fatalf("LockHolder = %d %q %v, want this process (%d)", pid, cmd, ok, syscall.Getpid())
	}
}
