package beads

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/proc/proctest"
)

func fakeBeads(t *testing.T, kind, ready string) (Source, string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakebd", kind))
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "argv.log")
	t.Setenv("SPOOL_FAKEBD_LOG", log)
	if ready != "" {
		t.Setenv("SPOOL_FAKEBD_READY", filepath.Join("..", "..", "testdata", "fakebd", ready))
	}
	t.Setenv("SPOOL_FAKEBD_FAIL", "")
	return Source{Kind: kind, Bin: bin}, log
}

func readLog(t *testing.T, path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestFakeBeadsBareArray(t *testing.T) {
	b, log := fakeBeads(t, "bd", "ready-array.json")
	cands, err := b.Ready(context.Background(), []string{"automated"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 2 || cands[0].ID != "bd-042" || cands[0].Priority != 1 || !cands[0].CreatedAt.Equal(time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("candidates %+v", cands)
	}
	if got := readLog(t, log); len(got) != 1 || got[0] != "bd ready --json --limit 0 --label=automated" {
		t.Fatalf("argv %q", got)
	}
	ctx := context.Background()
	if err := b.Close(ctx, "bd-042", "done"); err != nil {
		t.Fatal(err)
	}
	if err := b.LabelAdd(ctx, "bd-042", "blocked"); err != nil {
		t.Fatal(err)
	}
	if err := b.SetPriority(ctx, "bd-042", 3); err != nil {
		t.Fatal(err)
	}
	if err := b.LabelRemove(ctx, "bd-042", "blocked"); err != nil {
		t.Fatal(err)
	}
	want := []string{"bd ready --json --limit 0 --label=automated", "bd close --reason=done -- bd-042",
		"bd label add -- bd-042 blocked", "bd update --priority=3 -- bd-042", "bd label remove -- bd-042 blocked"}
	if got := readLog(t, log); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("argv\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFakeBeadsWrapped(t *testing.T) {
	b, log := fakeBeads(t, "br", "ready-wrapped.json")
	cands, err := b.Ready(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 2 || cands[0].ID != "br-7f3a" || cands[0].Priority != 0 || cands[1].IssueType != "chore" {
		t.Fatalf("candidates %+v", cands)
	}
	if got := readLog(t, log); got[0] != "br ready --json --limit 0" {
		t.Fatalf("argv %q", got)
	}
}

func TestFakeBeadsErrors(t *testing.T) {
	ctx := context.Background()
	b, _ := fakeBeads(t, "bd", "ready-array.json")
	t.Setenv("SPOOL_FAKEBD_FAIL", "database is locked")
	_, err := b.Ready(ctx, nil)
	f, ok := fault.As(err)
	if !ok || f.Code != "source_failed" || f.Kind != fault.Environment || !strings.Contains(f.Message, "database is locked") {
		t.Fatalf("failing bd: %#v", err)
	}
	t.Setenv("SPOOL_FAKEBD_FAIL", "")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("Error: no beads database found\n"), 0o644)
	t.Setenv("SPOOL_FAKEBD_READY", bad)
	_, err = b.Ready(ctx, nil)
	f, ok = fault.As(err)
	if !ok || f.Code != "source_parse_error" || f.Kind != fault.Environment || f.Fields["output"] != "Error: no beads database found\n" {
		t.Fatalf("garbage from bd: %#v", err)
	}
	missing := Source{Kind: "bd", Bin: filepath.Join(t.TempDir(), "no-such-bd")}
	if _, err := missing.Ready(ctx, nil); err == nil {
		t.Fatal("a missing binary must fail")
	}
}

func TestParseReady(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ids  string
		fail bool
	}{
		{``, "", false},
		{`null`, "", false},
		{`[]`, "", false},
		{`{"schema_version":1,"items":[]}`, "", false},
		{`[{"id":"a"},{"id":"b","priority":4,"extra":{"x":[1]}}]`, "a,b", false},
		{`{"issues":[{"id":"a"}]}`, "a", false},
		{`{"schema_version":1}`, "", true},
		{`[{"title":"no id"}]`, "", true},
		{`[{"id":"a","priority":9}]`, "", true},
		{`[{"id":"a","created_at":"yesterday"}]`, "", true},
		{`[1]`, "", true},
		{`"text"`, "", true},
		{`[{"id":"a"`, "", true},
	} {
		cands, err := ParseReady([]byte(tc.in))
		if (err != nil) != tc.fail {
			t.Errorf("%s: err %v", tc.in, err)
			continue
		}
		var ids []string
		for _, c := range cands {
			ids = append(ids, c.ID)
		}
		if strings.Join(ids, ",") != tc.ids {
			t.Errorf("%s: ids %v", tc.in, ids)
		}
	}
}

func FuzzParseReady(f *testing.F) {
	for _, name := range []string{"ready-array.json", "ready-wrapped.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fakebd", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"items":[{"id":"x","priority":2,"labels":["a"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cands, err := ParseReady(b)
		if err != nil {
			return
		}
		for _, c := range cands {
			if c.ID == "" || c.Priority < 0 || c.Priority > MaxPriority {
				t.Fatalf("accepted %+v", c)
			}
		}
	})
}

// Against a real bd when one is installed.
func TestRealBeads(t *testing.T) {
	if _, err := exec.LookPath("bd"); err != nil {
		t.Skip("bd is not on PATH")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", "--prefix", "rb"}, {"create", "Real bead", "-p", "1"}} {
		cmd := exec.Command("bd", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("bd %v: %v\n%s", args, err, out)
		}
	}
	cands, err := Source{Kind: "bd", Dir: dir}.Ready(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Title != "Real bead" || cands[0].Priority != 1 {
		t.Fatalf("candidates %+v", cands)
	}
}

// bd/br run in a process group of their own that ends with them: what one
// leaves running (a background job that did not detach) does not outlive it.
func TestBeadsLeaveNothingRunning(t *testing.T) {
	dir := t.TempDir()
	bin, pidfile := filepath.Join(dir, "bd"), filepath.Join(dir, "pid")
	script := "#!/bin/sh\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > " + pidfile + "\necho '[]'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := (Source{Kind: "bd", Bin: bin}).Ready(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	proctest.WaitExited(t, pid)
}
