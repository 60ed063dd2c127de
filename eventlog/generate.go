package eventlog

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Generate writes n synthetic events for writer into dir, for benchmarks and
// load tests. Writer k of m gets lc k, k+m, k+2m, ... so that several
// generated writers interleave in replay order.
func Generate(dir, writer string, n, k, m int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, writer+Ext), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	types := []string{"bench.created", "bench.updated", "bench.closed"}
	for i := 0; i < n; i++ {
		e := &Event{V: Version, Writer: writer, Seq: uint64(i + 1), LC: uint64(k + i*m),
			At: start.Add(time.Duration(i) * time.Millisecond), Actor: "bench@example.com",
			Type: types[i%len(types)], Subject: fmt.Sprintf("b-%d", i%10_000),
			Data: []byte(fmt.Sprintf(`{"title":"synthetic event %d","priority":%d,"labels":["bench","load"]}`, i, i%5))}
		if e.ID, err = e.computeID(); err != nil {
			return err
		}
		line, err := e.Encode()
		if err != nil {
			return err
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
