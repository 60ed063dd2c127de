//go:build !linux

package table

func hugePages([]byte) {}
