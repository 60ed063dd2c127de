package workqueue

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
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
		if len(DefaultPolicy().Select(cands, Lookup(s.History), Gate{}, now, 1)) != 1 {
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
