//go:build !linux

package main

import "syscall"

// ownGroupDyingWithTest starts a process in a group of its own; only
// Linux has a parent-death signal.
func ownGroupDyingWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
