// Package proctest lets tests check that processes ended.
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Running reports whether pid is running: in /proc and not a zombie (an
// orphan's zombie may wait a long time for a reaper that never comes).
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// WaitExited waits, at most 10 s in all, until none of pids is Running.
func WaitExited(t testing.TB, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for Running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// WaitFile waits, at most 30 s, until path holds whole lines (ends in a
// newline), and returns its content.
func WaitFile(t testing.TB, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReadPID waits for the pid a process wrote to path (echo $$ > path).
func ReadPID(t testing.TB, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(string(bytes.TrimSpace([]byte(WaitFile(t, path)))))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// Stop sends pid SIGSTOP and waits, at most 10 s, until every thread of it
// has stopped: a signal sent to it afterwards is not acted on.
func Stop(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stopped(pid int) bool {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' && b[i+2] != 't' {
			return false
		}
	}
	return true
}

// WaitDirFree waits, at most 10 s, until no running process works in dir
// or below it (its current directory). A process a killed spool left
// behind, such as a local remote's receive-pack still writing objects,
// would otherwise race the removal of t.TempDir.
func WaitDirFree(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		busy := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || !Running(pid) {
				continue
			}
			cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
			if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
				busy = pid
				break
			}
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d still works in %s", busy, dir)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
