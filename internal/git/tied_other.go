//go:build !linux

package git

import "syscall"

// tiedAttr is nothing without Linux's parent-death signal: RunTied is Run.
func tiedAttr() *syscall.SysProcAttr { return nil }

// unattendedAttr puts git in a session of its own, with no terminal.
func unattendedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
