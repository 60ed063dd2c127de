//go:build !linux

package git

import "syscall"

// tiedAttr is nothing without Linux's parent-death signal: RunTied is Run.
func tiedAttr() *syscall.SysProcAttr { return nil }
