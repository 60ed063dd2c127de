package workqueue

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
)

// benchState is 10,000 tasks: a tenth waits on another, a fifth have failed
// once, a few are claimed.
func benchState(b *testing.B) *State {
	b.Helper()
	s := NewState()
	at := t0
	apply := func(d eventlog.Draft) {
		e := eventlog.Event{Type: d.Type, Subject: d.Subject, Actor: "bench", At: at}
		e.Data, _ = jsonMarshal(d.Data)
		s.Apply(&e)
	}
	labels := []string{"automated", "backend", "frontend", "infra", "docs"}
	for i := 0; i < 10_000; i++ {
		id := fmt.Sprintf("sp-%05d", i)
		d := CreatedData{Title: "task " + id, Priority: i % 5, IssueType: "task", Labels: []string{labels[i%5]}}
		if i%10 == 9 {
			d.Deps = []string{fmt.Sprintf("sp-%05d", i-1)}
		}
		apply(eventlog.Draft{Type: TypeCreated, Subject: id, Data: d})
		at = at.Add(time.Second)
		switch {
		case i%5 == 0:
			apply(eventlog.Draft{Type: TypeClaimed, Subject: id, Data: ClaimedData{Attempt: 1, Worker: "w", LeaseUntil: at.Add(time.Hour)}})
			apply(eventlog.Draft{Type: TypeFailed, Subject: id, Data: FailedData{Attempt: 1, Error: "x"}})
		case i%97 == 0:
			apply(eventlog.Draft{Type: TypeClaimed, Subject: id, Data: ClaimedData{Attempt: 1, Worker: "w", LeaseUntil: at.Add(time.Hour)}})
		}
	}
	return s
}

func BenchmarkReady(b *testing.B) {
	s := benchState(b)
	now := t0.Add(3 * time.Hour)
	b.ResetTimer()
	for range b.N {
		if len(s.Ready(DefaultPolicy(), ReadyFilter{}, now, 10)) != 10 {
			b.Fatal("want 10")
		}
	}
}

// BenchmarkNextSelection is next's decision on the tracker: expiries, then the best eligible task.
func BenchmarkNextSelection(b *testing.B) {
	s := benchState(b)
	now := t0.Add(3 * time.Hour)
	b.ResetTimer()
	for range b.N {
		if _, c, err := Next(s, nil, true, DefaultPolicy(), Gate{Require: []string{"automated"}}, "w", "w", now); err != nil || c == nil {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkSelectExternal is next over 10,000 candidates from bd ready.
func BenchmarkSelectExternal(b *testing.B) {
	s := benchState(b)
	cands := Candidates(s.Ready(DefaultPolicy(), ReadyFilter{}, t0, Unsorted))
	now := t0.Add(3 * time.Hour)
	b.ResetTimer()
	for range b.N {
		if len(DefaultPolicy().Select(cands, s.Entry, Gate{}, now, 1)) != 1 {
			b.Fatal("want 1")
		}
	}
}

func BenchmarkDecodeTasks(b *testing.B) {
	snap, err := NewTasksProjection(benchState(b)).MarshalState()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(snap)))
	b.ResetTimer()
	for range b.N {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(snap); err != nil {
			b.Fatal(err)
		}
		p.State()
	}
}

// BenchmarkSaveTasks saves the 10,000 tasks' table from the table opened,
// as a command's save does: every record scanned and written again, with
// the index, the listings, stats' summary and bd's section.
func BenchmarkSaveTasks(b *testing.B) {
	snap, err := NewTasksProjection(benchState(b)).MarshalState()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(snap); err != nil {
			b.Fatal(err)
		}
		if _, err := p.MarshalState(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTasks are 10,000 tasks as tasks.json records them: a description of
// a few lines, two labels, a tenth with a blocker, five comments each.
func benchTasks() []TaskJSON {
	out := make([]TaskJSON, 10_000)
	at := time.Date(2026, 11, 22, 9, 30, 0, 123456789, time.UTC)
	desc := strings.Repeat("Make the list encoder fast: \"tasks.json\" spends 2 s of 6 in encoding/json.\n", 4)
	for i := range out {
		id := fmt.Sprintf("sp-%05d", i)
		t := TaskJSON{ID: id, Title: "task " + id + ": write the lists without reflection", Description: desc,
			Status: StatusOpen, Priority: i % 5, IssueType: "task", Owner: "dev@example.com", CreatedAt: at,
			CreatedBy: "dev@example.com", UpdatedAt: at.Add(time.Hour), Labels: []string{"backend", "perf"}}
		if i%10 == 9 {
			t.Dependencies = []DepJSON{{IssueID: id, DependsOnID: fmt.Sprintf("sp-%05d", i-1), Type: DepBlocks, CreatedAt: at, CreatedBy: "dev@example.com"}}
		}
		for c := range 5 {
			t.Comments = append(t.Comments, CommentJSON{ID: int64(5*i + c), IssueID: id, Author: "worker-3",
				Text: "Tried it with the fixture of 100,000 tasks; the profile shows <encodeState> & reflection at the top.", CreatedAt: at.Add(time.Duration(c) * time.Minute)})
		}
		out[i] = t
		at = at.Add(time.Second)
	}
	return out
}

// plainTask is a TaskJSON without its AppendJSON: encoding/json writes it.
type plainTask TaskJSON

// BenchmarkWriteTasks writes benchTasks as tasks.json is written
// (escapeHTML), by encoding/json and by the appenders.
func BenchmarkWriteTasks(b *testing.B) {
	tasks := benchTasks()
	write := func(w io.Writer, plain bool) error {
		return jsonout.WriteList(w, len(tasks), func(i int) any {
			if plain {
				return plainTask(tasks[i])
			}
			return tasks[i]
		}, true)
	}
	var std, fast bytes.Buffer
	if err := write(&std, true); err != nil {
		b.Fatal(err)
	}
	if err := write(&fast, false); err != nil || !bytes.Equal(std.Bytes(), fast.Bytes()) {
		b.Fatal("the appenders write other bytes than encoding/json", err)
	}
	for _, c := range []struct {
		name  string
		plain bool
	}{{"encoding_json", true}, {"appender", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(std.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if err := write(io.Discard, c.plain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
