package board_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// The agent's output streams as it is written, on the page's one event
// stream (/api/events?output=1): the end of the file first, then what is
// appended, from where spool watch writes it (never the path the log
// names).
func TestOrchestratorOutputStream(t *testing.T) {
	f := newFixture(t)
	id := f.add(workqueue.NewTask{Title: "agent work"})
	run := orchestrator.RunDir(store.RunsDir(f.st.Repo), id)
	os.MkdirAll(run, 0o755)
	log := orchestrator.LogPath(run, 1)
	os.WriteFile(log, []byte("compiling\n"), 0o644)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if _, _, err := f.env(alice).Write(context.Background(), nil, func(*projections.View, string) ([]eventlog.Draft, error) {
		return []eventlog.Draft{
			{Type: orchestrator.TypeClaimed, Subject: id, Data: orchestrator.ClaimedData{Attempt: 1, Branch: "spool/" + id, RunDir: run}},
			{Type: orchestrator.TypeAgentStarted, Subject: id, Data: orchestrator.StartedData{Attempt: 1, Log: elsewhere}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/events?output=1", nil)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msgs := make(chan [2]string, 16)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(res.Body)
		event := ""
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event != "" {
				var text string
				json.Unmarshal([]byte(d), &text)
				msgs <- [2]string{event, text}
			} else if sc.Text() == "" {
				event = "" // the log's own events are unnamed messages
			}
		}
	}()
	next := func() [2]string {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message in 10 s")
			return [2]string{}
		}
	}
	// The page appends what follows to what it has: the newline stays.
	if m := next(); m != [2]string{"reset", "compiling\n"} {
		t.Fatalf("first message %q", m)
	}
	file, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	file.WriteString("tests pass ✓\n")
	file.Close()
	if m := next(); m != [2]string{"append", "tests pass ✓\n"} {
		t.Fatalf("then %q", m)
	}
	os.WriteFile(log, []byte("again\n"), 0o644) // truncated: start again
	if m := next(); m != [2]string{"reset", "again\n"} {
		t.Fatalf("after a truncation %q", m)
	}
	// A FIFO in the log's place is never opened: reading it would block
	// the stream for good.
	os.Remove(log)
	if err := syscall.Mkfifo(log, 0o644); err != nil {
		t.Fatal(err)
	}
	if m := next(); m != [2]string{"reset", ""} {
		t.Fatalf("with a FIFO in its place %q", m)
	}
}
