package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/internal/store"
)

func newService(t *testing.T, dir string, warn func(string)) *Service {
	t.Helper()
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if warn == nil {
		warn = func(string) {}
	}
	return Open(store.Env{Store: st, Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Warn: warn,
		Actor: func(context.Context) (string, error) { return "ada@example.com", nil }}, dir)
}

const pending = "---\nprd_approval: pending\nbeads_approval: approved\n---\n# P\n"

// Sync's cache keys a file on its size, times and identity: an edit that
// keeps the size and puts the mtime back is still seen (its ctime moved),
// and a damaged cache is only a slower sync.
func TestSyncSeesEveryEdit(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n", "docs/prd/p.md": pending})
	ctx := context.Background()
	s := newService(t, r.Root, nil)
	if _, _, err := s.Start(ctx, "f", "", 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Add(ctx, "f", "p", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, "p", ""); err != nil {
		t.Fatal(err)
	}
	if n, err := newService(t, r.Root, nil).Sync(ctx, ""); n != 0 || err != nil {
		t.Fatalf("a sync after submit recorded %d (%v)", n, err)
	}
	path := filepath.Join(r.Root, "docs", "prd", "p.md")
	st, _ := os.Stat(path)
	time.Sleep(10 * time.Millisecond) // a later ctime
	same := strings.Replace(pending, "prd_approval: pending", "prd_approval: approved", 1)[:len(pending)]
	if err := os.WriteFile(path, []byte(same), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, st.ModTime(), st.ModTime())
	if n, err := newService(t, r.Root, nil).Sync(ctx, ""); n == 0 || err != nil {
		t.Fatalf("an edit that kept size and mtime was missed (%d, %v)", n, err)
	}
	q, _ := newService(t, r.Root, nil).Read(ctx)
	if it := q.Items[prdqueue.ItemKey{Feature: "f", PRD: "p"}]; it.State != prdqueue.Approved {
		t.Fatalf("state %s", it.State)
	}
	cache := filepath.Join(r.Root, ".git", "spool", "prd-cache")
	if b, err := os.ReadFile(cache); err != nil || !strings.HasPrefix(string(b), cacheHeader) {
		t.Fatalf("cache %q %v", b, err)
	}
	os.WriteFile(cache, []byte(cacheHeader+"garbage\n1 2 3\n"), 0o644)
	if n, err := newService(t, r.Root, nil).Sync(ctx, ""); n != 0 || err != nil {
		t.Fatalf("with a damaged cache: %d %v", n, err)
	}
}

// A submitted PRD whose file is gone or has front matter spool cannot read
// is recorded so, with one warning, and its entry waits until the file is
// back; a file this machine cannot read for another reason (a directory
// where the file was) is a warning, and the PRD is left as it was.
func TestSyncRecordsUnreadableFiles(t *testing.T) {
	approved := "---\nprd_approval: approved\nbeads_approval: approved\n---\n# P\n"
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n", "docs/prd/p.md": approved})
	ctx := context.Background()
	s := newService(t, r.Root, nil)
	s.Start(ctx, "f", "", 2)
	s.Add(ctx, "f", "p", "")
	s.Add(ctx, "f", "later", "")
	if _, err := s.Submit(ctx, "p", ""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.Root, "docs", "prd", "p.md")
	sync := func() (int, []string) {
		t.Helper()
		var warnings []string
		n, err := newService(t, r.Root, func(w string) { warnings = append(warnings, w) }).Sync(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return n, warnings
	}
	entry := func() prdqueue.ManifestItem {
		q, _ := newService(t, r.Root, nil).Read(ctx)
		return q.ManifestItem(q.Items[prdqueue.ItemKey{Feature: "f", PRD: "p"}])
	}
	for _, tc := range []struct {
		name, reason, warning string
		break_                func()
	}{
		{"deleted", prdqueue.CodePRDFileMissing.Name, "PRD p waits: PRD file docs/prd/p.md does not exist", func() { os.Remove(path) }},
		{"bad front matter", prdqueue.CodeInvalidFrontMatter.Name, "PRD p waits: docs/prd/p.md: front matter: line 2",
			func() { os.WriteFile(path, []byte("---\nprd_approval: [\n---\n"), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.break_()
			n, warnings := sync() // later has no file yet, and is not submitted: no warning
			if n != 1 || len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.warning) {
				t.Fatalf("%d events, warnings %q", n, warnings)
			}
			m := entry()
			if m.State != prdqueue.Approved || m.BlockedReason != tc.reason ||
				!strings.HasSuffix(m.LastError, "; the entry waits until a sync reads the file again (or spool prd remove p --feature f)") {
				t.Fatalf("%+v", m)
			}
			if n, warnings := sync(); n != 0 || len(warnings) != 0 {
				t.Fatalf("again: %d events, warnings %q", n, warnings)
			}
			os.WriteFile(path, []byte(approved), 0o644)
			if n, warnings := sync(); n != 1 || len(warnings) != 0 {
				t.Fatalf("back: %d events, warnings %q", n, warnings)
			}
			if m := entry(); m.State != prdqueue.Approved || m.BlockedReason != "" || m.LastError != "" {
				t.Fatalf("back: %+v", m)
			}
		})
	}
	os.Remove(path)
	os.Mkdir(path, 0o755)
	n, warnings := sync()
	if n != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "PRD p left as it was") {
		t.Fatalf("%d %q", n, warnings)
	}
}
