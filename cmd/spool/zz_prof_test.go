package main

import (
	"io"
	"testing"
)

func BenchmarkListProf(b *testing.B) {
	for b.Loop() {
		run([]string{"-C", "/tmp/bmk/repo", "merge", "list", "--json"}, io.Discard, io.Discard)
	}
}
func BenchmarkSubmitProf(b *testing.B) {
	for b.Loop() {
		run([]string{"-C", "/tmp/bmk/repo-bench-ws", "merge", "submit", "--no-push"}, io.Discard, io.Discard)
	}
}
