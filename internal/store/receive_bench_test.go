package store

import (
	"context"
	"path/filepath"
	"testing"
)

// What every command pays for the log living outside the work tree: the
// look at the copies of the sync branch (and the old layout's directory)
// that finds nothing new.
func BenchmarkReceiveNothingNew(b *testing.B) {
	isolateGit(b)
	dir := b.TempDir()
	runGit(b, dir, "init", "-q", "-b", "main")
	writeFile(b, filepath.Join(dir, ".spool", "config.json"), "{}\n")
	s, err := Open(context.Background(), dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	writeN(b, s, "bench.tick", 100)
	commitLog(b, dir, "refs/remotes/origin/spool-log")
	runGit(b, dir, "update-ref", "refs/heads/spool-log", "refs/remotes/origin/spool-log")
	if err := s.Receive(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		s.received = nil // as a new command: received.json read again
		if err := s.Receive(context.Background(), false); err != nil {
			b.Fatal(err)
		}
	}
}
