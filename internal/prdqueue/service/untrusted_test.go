package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/projections"
)

// forge appends drafts as they are, without a decider's checks: what
// anyone who can push can put in the log.
func forge(t *testing.T, s *Service, drafts ...eventlog.Draft) {
	t.Helper()
	if _, _, err := s.Store.Write(context.Background(), s.Now, "mallory@example.com", []string{prdqueue.Name},
		func(*projections.View) ([]eventlog.Draft, error) { return drafts, nil }); err != nil {
		t.Fatal(err)
	}
}

// A forged prd.added naming a path outside the repository is skipped by
// the fold: spool prd approve finds no such PRD and writes nothing there.
func TestForgedPathOutsideTheRepository(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	outside := filepath.Join(filepath.Dir(r.Root), "outside")
	r.Write(outside, "rcfile", "export PATH=/usr/bin\n")
	ctx := context.Background()
	s := newService(t, r.Root, nil)
	if _, _, err := s.Start(ctx, "f", "", 2); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../outside/rcfile", "docs/../../outside/rcfile.md", "/etc/passwd.md", ".git/config.md", "./docs/x.md"} {
		forge(t, s, eventlog.Draft{Type: prdqueue.TypeAdded, Subject: prdqueue.PRDSubject("evil"),
			Data: prdqueue.AddedData{FeatureSlug: "f", PRDPath: path}})
	}
	forge(t, s, eventlog.Draft{Type: prdqueue.TypeFeatureStarted, Subject: prdqueue.FeatureSubject("../../x"),
		Data: prdqueue.FeatureData{FeatureSlug: "../../x", Mode: prdqueue.ModeSequential, WorkerCap: 1}})
	q, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.PRDs["evil"] != nil || len(q.Items) != 0 || len(q.Features) != 1 {
		t.Fatalf("the fold took a forged path: %+v %d items %d features", q.PRDs["evil"], len(q.Items), len(q.Features))
	}
	_, err = newService(t, r.Root, nil).Approve(ctx, "evil", "", "prd")
	if f, ok := fault.As(err); !ok || !f.Has(fault.CodeNotFound) {
		t.Fatalf("approve: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "rcfile")); string(b) != "export PATH=/usr/bin\n" {
		t.Fatalf("the file outside was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(r.Root, "x.json")); err == nil {
		t.Fatal("a manifest was written for the forged feature")
	}
}

// A committed symbolic link (the PRD's own, or a directory's on the way)
// that leads outside the work tree is refused before anything is read or
// written through it; one that stays inside is followed, and the link is
// kept.
func TestPRDLinksAreConfinedToTheWorkTree(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, prd string
		link      func(root, outside string)
		inside    string // the file approve should write, relative to the root; "" when refused
	}{
		{"file link out", "docs/prd/p.md", func(root, outside string) {
			os.Symlink(filepath.Join(outside, "victim.md"), filepath.Join(root, "docs", "prd", "p.md"))
		}, ""},
		{"relative file link out", "docs/prd/p.md", func(root, outside string) {
			os.Symlink("../../../outside/victim.md", filepath.Join(root, "docs", "prd", "p.md"))
		}, ""},
		{"directory link out", "docs/out/victim.md", func(root, outside string) {
			os.Symlink(outside, filepath.Join(root, "docs", "out"))
		}, ""},
		{"link into .git", "docs/prd/p.md", func(root, outside string) {
			os.WriteFile(filepath.Join(root, ".git", "p.md"), []byte(pending), 0o644)
			os.Symlink("../../.git/p.md", filepath.Join(root, "docs", "prd", "p.md"))
		}, ""},
		{"link inside", "docs/prd/p.md", func(root, outside string) {
			os.MkdirAll(filepath.Join(root, "docs", "real"), 0o755)
			os.WriteFile(filepath.Join(root, "docs", "real", "p.md"), []byte(pending), 0o644)
			os.Symlink("../real/p.md", filepath.Join(root, "docs", "prd", "p.md"))
		}, "docs/real/p.md"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := gittest.New(t, map[string]string{".spool/config.json": "{}\n", "docs/prd/.keep": ""})
			outside := filepath.Join(filepath.Dir(r.Root), "outside")
			r.Write(outside, "victim.md", pending)
			c.link(r.Root, outside)
			s := newService(t, r.Root, nil)
			if _, _, err := s.Start(ctx, "f", "", 2); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Add(ctx, "f", "p", c.prd); err != nil {
				t.Fatal(err)
			}
			_, err := newService(t, r.Root, nil).Approve(ctx, "p", "", "prd")
			if b, _ := os.ReadFile(filepath.Join(outside, "victim.md")); string(b) != pending {
				t.Fatalf("written through the link: %q", b)
			}
			if c.inside == "" {
				if f, ok := fault.As(err); !ok || !f.Has(prdqueue.CodePRDFileOutside) {
					t.Fatalf("approve: %v", err)
				}
				_, err = newService(t, r.Root, nil).Submit(ctx, "p", "")
				if f, ok := fault.As(err); !ok || !f.Has(prdqueue.CodePRDFileOutside) {
					t.Fatalf("submit read through the link: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(c.inside))); !strings.Contains(string(b), "prd_approval: approved") {
				t.Fatalf("the file inside was not approved: %q", b)
			}
			if fi, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(c.prd))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced by a file: %v", err)
			}
		})
	}
}
