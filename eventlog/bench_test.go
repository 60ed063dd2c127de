package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAppend measures one fsync'd append (lock, tail read, write, fsync,
// unlock) next to the floor it cannot beat: a raw write of the same bytes + fsync.
func BenchmarkAppend(b *testing.B) {
	data := map[string]string{"title": "benchmark event with a payload of about two hundred and fifty six bytes in all"}
	b.Run("raw-write-fsync", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		line := make([]byte, 255)
		for i := range line {
			line[i] = 'x'
		}
		line = append(line, '\n')
		b.ResetTimer()
		for b.Loop() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("spool-append", func(b *testing.B) {
		l := benchLog(b)
		ctx := context.Background()
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		b.ResetTimer()
		for b.Loop() {
			if _, err := l.Append(ctx, at, "bench@example.com", []Draft{{Type: "bench.appended", Subject: "b-1", Data: data}}, AppendOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchLog(b *testing.B) *Log {
	dir := b.TempDir()
	return Open(Options{Dir: filepath.Join(dir, "events"), PrivateDir: filepath.Join(dir, "private")})
}

// BenchmarkRead measures decoding and merging writer files in replay order.
func BenchmarkRead(b *testing.B) {
	const perWriter, writers = 50_000, 2
	l := benchLog(b)
	for w := 0; w < writers; w++ {
		if err := generate(l.Dir(), fmt.Sprintf("w%d", w), perWriter, w+1, writers); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := l.Read(nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.Close()
		if n != perWriter*writers {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(perWriter*writers*b.N)/b.Elapsed().Seconds(), "events/s")
}

// generate writes n synthetic events for writer into dir. Writer k of m gets
// lc k, k+m, k+2m, ... so that several generated writers interleave in
// replay order. (cmd/spoolbench gen makes the same log for whole processes.)
func generate(dir, writer string, n, k, m int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	types := []string{"bench.created", "bench.updated", "bench.closed"}
	prev := ""
	for i := range n {
		e := &Event{V: Version, Writer: writer, Seq: uint64(i + 1), Prev: prev, LC: uint64(k + i*m),
			At: start.Add(time.Duration(i) * time.Millisecond), Actor: "bench@example.com",
			Type: types[i%len(types)], Subject: fmt.Sprintf("b-%d", i%10_000),
			Data: fmt.Appendf(nil, `{"title":"synthetic event %d","priority":%d,"labels":["bench","load"]}`, i, i%5)}
		id, err := e.computeID()
		if err != nil {
			return err
		}
		e.ID, prev = id, id
		line, err := e.Encode()
		if err != nil {
			return err
		}
		buf.Write(line)
	}
	return os.WriteFile(filepath.Join(dir, writer+Ext), buf.Bytes(), 0o644)
}

// BenchmarkDecode measures decoding one line of a generated log and
// checking it against the rules, as a reader does (the replay hot path).
func BenchmarkDecode(b *testing.B) {
	dir := b.TempDir()
	if err := generate(dir, "w", 1000, 1, 1); err != nil {
		b.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(dir, "w"+Ext))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(content, []byte{'\n'}), []byte{'\n'})
	b.SetBytes(int64(len(content) / len(lines)))
	b.ReportAllocs()
	d, r := newDecoder("w"), newRules("w")
	i := 0
	for b.Loop() {
		if i == len(lines) {
			i, r = 0, newRules("w")
		}
		e, sp, err := d.decode(lines[i])
		if err != nil {
			b.Fatal(err)
		}
		if br := r.check(lines[i], e, sp, i+1); br != nil {
			b.Fatal(br.msg)
		}
		i++
	}
}

// BenchmarkCheckLines measures checking a writer file of 100,000 events as
// a receive, a fresh clone and doctor do: every line read, decoded and
// judged against the rules.
func BenchmarkCheckLines(b *testing.B) {
	dir := b.TempDir()
	const n = 100_000
	if err := generate(dir, "w", n, 1, 1); err != nil {
		b.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(dir, "w"+Ext))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		rep := &CheckReport{}
		if err := checkLinesFrom(bytes.NewReader(content), "w", rep, newRules("w"), 1); err != nil || rep.Events != n || len(rep.Problems) > 0 {
			b.Fatalf("%v: %d events, %v", err, rep.Events, rep.Problems)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
