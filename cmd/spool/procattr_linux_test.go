package main

import "syscall"

// ownGroupDyingWithTest starts a process in a group of its own, killed
// when the thread that started it ends (the caller holds it).
func ownGroupDyingWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
