//go:build linux

package service

import (
	"io/fs"
	"syscall"
)

// sysStat is the file's change time and identity, where the system says.
func sysStat(st fs.FileInfo) (ctime int64, ino, dev uint64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Ctim.Sec*1e9 + sys.Ctim.Nsec, uint64(sys.Ino), uint64(sys.Dev)
	}
	return 0, 0, 0
}
