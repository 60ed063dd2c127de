package eventlog

import (
	"bufio"
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
	// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[1] == "->" {
			continue
		}
		dev := strings.Split(fields[5], ":")
		if len(dev) != 3 {
			continue
		}
		if ino, err := strconv.ParseUint(dev[2], 10, 64); err != nil || ino != sys.Ino {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			return 0, "", true
		}
		b, _ := os.ReadFile("/proc/" + fields[4] + "/cmdline")
		return pid, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), true
	}
	return 0, "", false
}
