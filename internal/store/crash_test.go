package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// crashChildEnv makes the test binary a process running the write path in
// a loop in the repository it names, printing each event id once Write
// returned (appended, projections saved).
const crashChildEnv = "SPOOL_STORE_TEST_CRASH_CHILD"

func crashChild(dir string) error {
	s, err := Open(context.Background(), dir, nil)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		evs, _, err := s.Write(context.Background(), time.Now(), "child", nil, func(*projections.View) ([]eventlog.Draft, error) {
			return []eventlog.Draft{{Type: "test.looped", Subject: fmt.Sprint(i)}}, nil
		})
		if err != nil {
			return err
		}
		out.WriteString(evs[0].ID + "\n")
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

func TestCrashDuringWrite(t *testing.T) {
	// Kills land anywhere in the write path: in the append, in the
	// catch-up, between a projection file and its snapshot, in renameio's
	// temp files. The next command must find the projections right.
	if testing.Short() {
		t.Skip("kills 40 processes")
	}
	dir := newRepo(t)
	acked := map[string]bool{}
	const rounds = 40
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 256)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if first, ok := <-lines; ok {
			acked[first] = true
			time.Sleep(time.Duration(rand.Int64N(int64(8 * time.Millisecond))))
		} else {
			cmd.Wait()
			t.Fatalf("round %d: the writer died before its first write", round)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for id := range lines {
			acked[id] = true
		}
		cmd.Wait()
		if round%10 == 9 {
			// A reader in between sees consistent projections too.
			s, _ := open(t, dir)
			if _, err := s.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}

	s, _ := open(t, dir)
	v, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	diffs, stale, _, err := s.Engine.Verify(context.Background())
	if err != nil || len(diffs) > 0 || len(stale) > 0 {
		t.Fatalf("Verify after crashes: %v %v %v", diffs, stale, err)
	}
	rep, err := s.Log.Check()
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("Check after crashes: %v %v", rep, err)
	}
	events := readEvents(t, s.Log)
	present := map[string]bool{}
	for _, e := range events {
		present[e.ID] = true
	}
	for id := range acked {
		if !present[id] {
			t.Fatalf("acknowledged event %s lost", id)
		}
	}
	if len(events)-len(acked) > rounds {
		t.Fatalf("%d events, %d acknowledged", len(events), len(acked))
	}
	if st := v.Get("stats").(*projections.Stats); st.Events != len(events) {
		t.Fatalf("stats count %d events, the log has %d", st.Events, len(events))
	}
	if entries, _ := os.ReadDir(filepath.Join(StateDir(s.Repo), ".tmp")); len(entries) > 0 {
		t.Fatalf("temp files left after a save: %v", entries)
	}
	t.Logf("%d rounds: %d events, %d acknowledged", rounds, len(events), len(acked))
}
