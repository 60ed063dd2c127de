package git

import "syscall"

// tiedAttr kills git when the thread that started it, and so spool, dies.
func tiedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// unattendedAttr puts git in a session of its own, with no terminal, and
// kills it when the thread that started it, and so spool, dies.
func unattendedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
