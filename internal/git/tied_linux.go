package git

import "syscall"

// tiedAttr kills git when the thread that started it, and so spool, dies.
func tiedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
