package eventlog

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockHolder names the process holding the log's lock, as Linux lists it
// in /proc/locks: its pid and command line. ok is false when the lock is
// free or the holder cannot be told (another system, another namespace).
func (l *Log) LockHolder() (pid int, cmdline string, ok bool) {
	st, err := os.Stat(l.LockPath())
	if err != nil {
		return 0, "", false
	}
	sys, isUnix := st.Sys().(*syscall.Stat_t)
	if !isUnix {
		return 0, "", false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	pid, ok = flockHolder(f, uint64(sys.Dev), uint64(sys.Ino))
	if !ok || pid <= 0 {
		return 0, "", ok
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return pid, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), true
}

// flockHolder finds, in the text of /proc/locks, the flock held on the file
// with device dev (st_dev) and inode ino: its pid, 0 when the pid cannot be
// read (the holder is in another pid namespace). A line is
//
//	1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
//
// with the device as hexadecimal major:minor; a process waiting for a lock
// is listed as "1: -> FLOCK …" and holds nothing. Inode numbers are unique
// only within one file system, hence the device.
func flockHolder(locks io.Reader, dev, ino uint64) (pid int, ok bool) {
	major, minor := devMajor(dev), devMinor(dev)
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(id[0], 16, 32)
		mnr, err2 := strconv.ParseUint(id[1], 16, 32)
		n, err3 := strconv.ParseUint(id[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || maj != major || mnr != minor || n != ino {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			return 0, true
		}
		return pid, true
	}
	return 0, false
}

// devMajor and devMinor split a Linux st_dev as glibc's major() and minor() do.
func devMajor(dev uint64) uint64 { return (dev>>8)&0xfff | uint64(uint32(dev>>32))&^0xfff }
func devMinor(dev uint64) uint64 { return dev&0xff | uint64(uint32(dev>>12))&^0xff }
