package main

import "syscall"

// ownGroupDying starts a process in a group of its own, killed should
// spoolbench die without stopping it.
func ownGroupDying() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
