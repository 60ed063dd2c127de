//go:build unix && !linux

package main

import "syscall"

// ownGroupDying starts a process in a group of its own; only Linux has a
// parent-death signal.
func ownGroupDying() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
