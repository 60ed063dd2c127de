package service

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/projections"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	f, ok := fault.As(err)
	if !ok || f.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// Each precondition of a submission (the workspace, its branch and
// commit, a clean tree), met and not met; a rejected submission is atomic:
// it appends nothing.
func TestSubmitPreconditions(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	reject := func(dir string, opt SubmitOptions, code string) {
		t.Helper()
		n := f.events()
		_, err := f.submit(dir, opt, "ada@example.com")
		wantCode(t, err, code)
		if f.events() != n {
			t.Fatalf("%s: a rejected submission appended %d events", code, f.events()-n)
		}
	}

	// The workspace must be among git worktree list.
	reject(f.Root, SubmitOptions{Workspace: "nope", NoPush: true}, mergequeue.CodeSessionNotFound.Name)
	reject(f.Root, SubmitOptions{Workspace: "bad\tname", NoPush: true}, mergequeue.CodeInvalidWorkspaceName.Name)
	// The worktree is clean, or --auto-commit.
	f.Write(feat, "dirty.txt", "x\n")
	reject(feat, SubmitOptions{NoPush: true}, mergequeue.CodeWorkspaceNotClean.Name)
	resp := f.mustSubmit(f.Root, SubmitOptions{Workspace: "feat", NoPush: true, AutoCommit: true})
	head := f.Git(feat, "rev-parse", "HEAD")
	if resp.HeadSHA != head || f.Git(feat, "status", "--porcelain") != "" {
		t.Fatalf("auto-commit: head %s, response %s", head, resp.HeadSHA)
	}
	// Head and branch come from the workspace.
	if resp.Branch != "feat" || resp.Workspace != "feat" || resp.Status != mergequeue.Pending || *resp.Position != 1 {
		t.Fatalf("response %+v", resp)
	}

	// A detached HEAD has no branch.
	det := filepath.Join(filepath.Dir(f.Root), "det")
	f.Git(f.Root, "worktree", "add", "-q", "--detach", det, "main")
	reject(det, SubmitOptions{NoPush: true}, mergequeue.CodeDetachedHead.Name)
	// An unborn branch has no commit.
	f.Git(det, "checkout", "-q", "--orphan", "empty")
	reject(det, SubmitOptions{NoPush: true}, mergequeue.CodeInvalidHeadSHA.Name)
	// An abandoned worktree (directory gone) cannot be submitted.
	gone := f.Worktree("gone", "g.txt", "g\n")
	os.RemoveAll(gone)
	reject(f.Root, SubmitOptions{Workspace: "gone", NoPush: true}, mergequeue.CodeSessionNotFound.Name)
}

// The branch is pushed before queueing when a remote exists.
func TestSubmitPush(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	resp := f.mustSubmit(feat, SubmitOptions{})
	if !resp.Pushed || f.Git(f.Remote, "rev-parse", "refs/heads/feat") != resp.HeadSHA {
		t.Fatalf("not pushed: %+v", resp)
	}
	// amend and submit again: the rewritten branch is pushed, the entry updated
	f.Git(feat, "commit", "-q", "--amend", "-m", "amended")
	resp2 := f.mustSubmit(feat, SubmitOptions{})
	if resp2.SubmissionType != mergequeue.SubmissionUpdated || resp2.DedupeKey != resp.DedupeKey ||
		f.Git(f.Remote, "rev-parse", "refs/heads/feat") != resp2.HeadSHA {
		t.Fatalf("amend: %+v", resp2)
	}
	// --no-push skips it
	other := f.Worktree("other", "o.txt", "o\n")
	if r := f.mustSubmit(other, SubmitOptions{NoPush: true}); r.Pushed {
		t.Fatal("pushed with --no-push")
	}

	// A rejected push queues nothing.
	hook := filepath.Join(f.Remote, "hooks", "pre-receive")
	os.WriteFile(hook, []byte("#!/bin/sh\necho no pushes today >&2\nexit 1\n"), 0o755)
	third := f.Worktree("third", "t.txt", "t\n")
	n := f.events()
	_, err := f.submit(third, SubmitOptions{}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeBookmarkPushFailed.Name)
	os.Remove(hook)
	// An unreachable remote queues nothing when offline
	// submissions are off (by default it queues the entry as pending_push:
	// merge_offline.txtar).
	f.config("merge.offline", "false")
	f.Git(f.Root, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "missing.git"))
	_, err = f.submit(third, SubmitOptions{}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeRemoteUnreachable.Name)
	if f.events() != n {
		t.Fatal("a failed push appended events")
	}
	// No remote configured: queued without a push.
	f.Git(f.Root, "remote", "remove", "origin")
	if r := f.mustSubmit(third, SubmitOptions{}); r.Pushed || r.EntryID != 3 {
		t.Fatalf("without a remote: %+v", r)
	}
}

// The change id is stable across amend and rebase,
// from a Change-Id trailer or generated and remembered.
func TestChangeIDStable(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.Git(feat, "commit", "-q", "--amend", "-m", "feature\n\nChange-Id: I0123456789abcdef")
	r1 := f.mustSubmit(feat, SubmitOptions{NoPush: true})
	if r1.ChangeID != "I0123456789abcdef" || r1.DedupeKey != r1.WorkspaceID+":I0123456789abcdef" || !strings.HasSuffix(r1.WorkspaceID, "/feat") {
		t.Fatalf("trailer: %+v", r1)
	}
	f.Commit(f.Root, "main.txt", "m\n", "main moves")
	f.Git(feat, "rebase", "-q", "main")
	r2 := f.mustSubmit(feat, SubmitOptions{NoPush: true})
	if r2.DedupeKey != r1.DedupeKey || r2.HeadSHA == r1.HeadSHA || r2.SubmissionType != mergequeue.SubmissionUpdated {
		t.Fatalf("after rebase: %+v", r2)
	}

	plain := f.Worktree("plain", "p.txt", "p\n")
	g1 := f.mustSubmit(plain, SubmitOptions{NoPush: true})
	f.Git(plain, "commit", "-q", "--amend", "-m", "amended")
	g2 := f.mustSubmit(plain, SubmitOptions{NoPush: true})
	if g1.DedupeKey != g2.DedupeKey || g1.EntryID != g2.EntryID || g1.HeadSHA == g2.HeadSHA {
		t.Fatalf("generated: %+v then %+v", g1, g2)
	}
	if f.queue().Entry(g1.EntryID).ChangeIDSource != mergequeue.SourceGenerated {
		t.Fatal("source")
	}
}

// jj is used only when the repository is a jj repository and jj is installed.
func TestChangeIDFromJJ(t *testing.T) {
	if _, err := exec.LookPath("jj"); err != nil {
		t.Skip("jj is not installed")
	}
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	cmd := exec.Command("jj", "git", "init", "--colocate")
	cmd.Dir = feat
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("jj git init: %v %s", err, out)
	}
	r := f.mustSubmit(feat, SubmitOptions{NoPush: true})
	if f.queue().Entry(r.EntryID).ChangeIDSource != mergequeue.SourceJJ {
		t.Fatal("jj change id not used")
	}
}

// Authorization through the edge: another actor cannot take a held workspace.
func TestSubmitUnauthorized(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	_, err := f.submit(feat, SubmitOptions{NoPush: true}, "bob@example.com")
	wantCode(t, err, mergequeue.CodeUnauthorizedWorkspace.Name)
	f.config("admins", `["bob@example.com"]`)
	if _, err := f.submit(feat, SubmitOptions{NoPush: true}, "bob@example.com"); err != nil {
		t.Fatal(err)
	}
}

// The response says what the log recorded (entry, status, position, type,
// time), through the real log.
func TestSubmitResponse(t *testing.T) {
	f := newFixture(t)
	a := f.Worktree("a", "a.txt", "a\n")
	b := f.Worktree("b", "b.txt", "b\n")
	ra := f.mustSubmit(a, SubmitOptions{NoPush: true, Priority: mergequeue.P(3), BeadID: "bd-7"})
	rb := f.mustSubmit(b, SubmitOptions{NoPush: true, Priority: mergequeue.P(1)})
	q := f.queue()
	for _, r := range []*Response{ra, rb} {
		e := q.Entry(r.EntryID)
		if e == nil || e.ID <= 0 {
			t.Fatalf("no entry %d", r.EntryID)
		}
		if r.Workspace != e.Workspace || r.DedupeKey != e.DedupeKey || r.HeadSHA != e.HeadSHA ||
			r.HeadSHA != f.Git(f.Root, "rev-parse", "refs/heads/"+e.Branch) {
			t.Errorf("response and entry differ: %+v vs %+v", r, e)
		}
		if r.SubmissionType != mergequeue.SubmissionNew || e.WorkspaceState != mergequeue.WorkspaceCreated || !r.SubmittedAt.Equal(e.AddedAt) || r.SubmittedAt.Year() != 2026 {
			t.Errorf("want a new entry, created, submitted when added: %+v", r)
		}
	}
	// the response was right when given; b's priority put it ahead of a afterwards
	if *ra.Position != 1 || ra.PendingCount != 1 || *rb.Position != 1 || rb.PendingCount != 2 {
		t.Errorf("positions when submitted: a at %d of %d, b at %d of %d", *ra.Position, ra.PendingCount, *rb.Position, rb.PendingCount)
	}
	if q.Entry(ra.EntryID).Position != 2 || q.Entry(rb.EntryID).Position != 1 || q.PendingCount != 2 {
		t.Error("positions not in priority order")
	}
	if *ra.BeadID != "bd-7" || rb.BeadID != nil || ra.Status != mergequeue.Pending {
		t.Error("response status or bead id")
	}
}

// A change id that cannot be used is refused, nothing queued.
func TestSubmitBadChangeID(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.Git(feat, "commit", "-q", "--amend", "-m", "feature\n\nChange-Id: I12:34")
	n := f.events()
	_, err := f.submit(feat, SubmitOptions{NoPush: true}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeChangeIDExtractionFailed.Name)
	if f.events() != n {
		t.Fatal("appended")
	}
}

// A submission the queue refuses pushes nothing either.
func TestRefusedSubmissionPushesNothing(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	f.Commit(feat, "g.txt", "g\n", "more")
	_, err := f.submit(feat, SubmitOptions{}, "bob@example.com")
	wantCode(t, err, mergequeue.CodeUnauthorizedWorkspace.Name)
	if out := f.Git(f.Remote, "branch", "--list", "feat"); out != "" {
		t.Fatalf("pushed anyway: %s", out)
	}
}

// A submission the queue refuses must not auto-commit in the user's worktree.
func TestRefusedAutoCommitChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.config("merge.capacity", "1")
	first := f.Worktree("first", "a.txt", "a\n")
	f.mustSubmit(first, SubmitOptions{NoPush: true})
	second := f.Worktree("second", "b.txt", "b\n")
	f.Write(second, "dirty.txt", "x\n")
	head := f.Git(second, "rev-parse", "HEAD")
	n := f.events()
	_, err := f.submit(second, SubmitOptions{NoPush: true, AutoCommit: true}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeQueueFull.Name)
	if got := f.Git(second, "rev-parse", "HEAD"); got != head {
		t.Fatalf("a refused submission committed in the worktree: HEAD %s, was %s", got, head)
	}
	if f.Git(second, "status", "--porcelain") == "" || f.events() != n {
		t.Fatalf("a refused submission changed the worktree or the log")
	}
}

// While the train processes an entry, an --auto-commit resubmission of its
// workspace is refused before anything is committed.
func TestAutoCommitRefusedWhileProcessing(t *testing.T) {
	f := newFixture(t)
	ws := f.Worktree("feat", "f.txt", "f\n")
	f.mustSubmit(ws, SubmitOptions{NoPush: true})
	st := f.store(f.Root)
	pol := mergequeue.PolicyFrom(st.Config)
	f.now = f.now.Add(time.Second)
	if _, _, err := st.Write(context.Background(), f.now, "train", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
		drafts, _ := mergequeue.DecideClaim(queueOf(v), "r1", mergequeue.Target{Branch: "main"}, pol, f.now)
		return drafts, nil
	}); err != nil {
		t.Fatal(err)
	}
	f.Write(ws, "more.txt", "x\n")
	head := f.Git(ws, "rev-parse", "HEAD")
	_, err := f.submit(ws, SubmitOptions{NoPush: true, AutoCommit: true}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeConcurrentModification.Name)
	if got := f.Git(ws, "rev-parse", "HEAD"); got != head {
		t.Fatalf("a refused submission committed in the worktree")
	}
}

// A workspace is the worktree, not its directory's base name: worktrees
// x/dupe and y/dupe (branches dupe1, dupe2) are two entries, each with its
// own branch and head; a directory name with spaces works too.
func TestSubmitWorktreesWithTheSameName(t *testing.T) {
	f := newFixture(t)
	parent := filepath.Dir(f.Root)
	add := func(path, branch string) string {
		os.MkdirAll(filepath.Dir(path), 0o755)
		f.Git(f.Root, "worktree", "add", "-q", path, "-b", branch)
		f.Commit(path, branch+".txt", branch+"\n", branch+": change")
		return path
	}
	x := add(filepath.Join(parent, "x", "dupe"), "dupe1")
	y := add(filepath.Join(parent, "y", "dupe"), "dupe2")
	spaced := add(filepath.Join(parent, "with space"), "spaced")
	rx := f.mustSubmit(x, SubmitOptions{NoPush: true})
	ry := f.mustSubmit(y, SubmitOptions{NoPush: true})
	rs := f.mustSubmit(spaced, SubmitOptions{NoPush: true})
	if rx.EntryID == ry.EntryID || ry.SubmissionType != mergequeue.SubmissionNew {
		t.Fatalf("y/dupe folded into x/dupe's entry: %+v then %+v", rx, ry)
	}
	q := f.queue()
	for _, c := range []struct {
		r           *Response
		dir, branch string
	}{{rx, x, "dupe1"}, {ry, y, "dupe2"}, {rs, spaced, "spaced"}} {
		e := q.Entry(c.r.EntryID)
		if e.Branch != c.branch || e.HeadSHA != f.Git(c.dir, "rev-parse", "HEAD") || e.Status != mergequeue.Pending {
			t.Errorf("entry %d: branch %s head %s status %s, want %s at %s", e.ID, e.Branch, e.HeadSHA, e.Status, c.branch, f.Git(c.dir, "rev-parse", "HEAD"))
		}
	}
	if q.Entry(rx.EntryID).Workspace != "dupe" || q.Entry(rs.EntryID).Workspace != "with space" {
		t.Errorf("display names %q, %q", q.Entry(rx.EntryID).Workspace, q.Entry(rs.EntryID).Workspace)
	}
	// Submitting again finds each worktree's own entry.
	f.Commit(y, "more.txt", "more\n", "dupe2: more")
	if r := f.mustSubmit(y, SubmitOptions{NoPush: true}); r.EntryID != ry.EntryID || r.SubmissionType != mergequeue.SubmissionUpdated {
		t.Fatalf("resubmitting y/dupe: %+v", r)
	}
	if e := f.queue().Entry(rx.EntryID); e.HeadSHA != f.Git(x, "rev-parse", "HEAD") || e.Branch != "dupe1" {
		t.Fatalf("x/dupe's entry changed: %s %s", e.Branch, e.HeadSHA)
	}
	// --workspace by base name is ambiguous; by path it is not.
	_, err := f.submit(f.Root, SubmitOptions{Workspace: "dupe", NoPush: true}, "ada@example.com")
	wantCode(t, err, mergequeue.CodeInvalidWorkspaceName.Name)
	if !strings.Contains(err.Error(), x) || !strings.Contains(err.Error(), y) {
		t.Errorf("the ambiguity does not list the paths: %v", err)
	}
	if r, err := f.submit(f.Root, SubmitOptions{Workspace: y, NoPush: true}, "ada@example.com"); err != nil || r.EntryID != ry.EntryID {
		t.Fatalf("--workspace %s: %+v, %v", y, r, err)
	}
	if r, err := f.submit(f.Root, SubmitOptions{Workspace: "with space", NoPush: true}, "ada@example.com"); err != nil || r.EntryID != rs.EntryID {
		t.Fatalf("--workspace 'with space': %+v, %v", r, err)
	}
	// The train merges each one's own branch.
	f.run()
	q = f.queue()
	for _, id := range []int64{rx.EntryID, ry.EntryID, rs.EntryID} {
		if q.Entry(id).Status != mergequeue.Merged {
			t.Fatalf("entry %d is %s: %s", id, q.Entry(id).Status, q.Entry(id).LastError)
		}
	}
	for _, file := range []string{"dupe1.txt", "dupe2.txt", "more.txt", "spaced.txt"} {
		if _, err := os.Stat(filepath.Join(f.Root, file)); err != nil {
			t.Errorf("main lacks %s", file)
		}
	}
}

// TestChangeIDGoGit reads a linked worktree's commit and its Change-Id trailer
// through the function submit uses.
func TestChangeIDGoGit(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "a.txt", "a\n")
	w := git.Worktree{Path: feat, Name: "feat"}
	for _, tc := range []struct {
		name, msg, wantID, wantSource, wantCode string
	}{
		{"present", "feature\n\nChange-Id: I0123456789abcdef\n", "I0123456789abcdef", mergequeue.SourceTrailer, ""},
		{"absent", "feature\n\nno trailers here\n", "", "", ""},
		{"in the title only", "Change-Id: Iabc\n", "", "", ""},
		{"key case-insensitive, last one wins", "feature\n\nchange-id: Ifirst\nCHANGE-ID: Isecond\n", "Isecond", mergequeue.SourceTrailer, ""},
		{"not a trailer block", "feature\n\nChange-Id: Iabc\nsome prose\n", "", "", ""},
		{"malformed: a colon", "feature\n\nChange-Id: I12:34\n", "", "", mergequeue.CodeChangeIDExtractionFailed.Name},
		{"malformed: a continuation line", "feature\n\nChange-Id: Iabc\n def\n", "", "", mergequeue.CodeChangeIDExtractionFailed.Name},
		{"empty value", "feature\n\nChange-Id:\n", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Git(feat, "commit", "-q", "--amend", "--cleanup=verbatim", "-m", tc.msg)
			sha := f.Git(feat, "rev-parse", "HEAD")
			for _, rev := range []string{"HEAD", sha} {
				head, id, source, err := changeID(context.Background(), w, rev, f.Root)
				if tc.wantCode != "" {
					wantCode(t, err, tc.wantCode)
					continue
				}
				if err != nil || head != sha || id != tc.wantID || source != tc.wantSource {
					t.Fatalf("changeID(%s) = %q, %q, %q, %v; want %s, %q, %q", rev, head, id, source, err, sha, tc.wantID, tc.wantSource)
				}
			}
		})
	}
	if _, _, _, err := changeID(context.Background(), w, "refs/heads/nope", f.Root); err == nil {
		t.Fatal("changeID of an unknown ref succeeded")
	} else {
		wantCode(t, err, mergequeue.CodeChangeIDExtractionFailed.Name)
	}
}

// An entry an older spool queued (no workspace_id: the worktree's name was
// its identity, its change id generated) is found again by the first
// submission after the upgrade from the same worktree: updated, not queued
// a second time; the train merges it as usual.
func TestSubmitAfterUpgradeFindsLegacyEntry(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	st := f.store(feat)
	head := f.Git(feat, "rev-parse", "HEAD")
	legacy := `{"entry_id":1,"to":"pending","workspace":"feat","worktree":"` + st.Repo.WorkTree + `","branch":"feat",` +
		`"change_id":"Iold","change_id_source":"generated","dedupe_key":"feat:Iold","head_sha":"` + head + `","priority":2}`
	_, _, err := st.Write(context.Background(), f.now, "ada@example.com", []string{mergequeue.Name}, func(*projections.View) ([]eventlog.Draft, error) {
		return []eventlog.Draft{{Type: mergequeue.EvSubmitted, Subject: mergequeue.Subject(1), Data: json.RawMessage(legacy)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Git(feat, "commit", "-q", "--amend", "-m", "amended after the upgrade")
	r := f.mustSubmit(feat, SubmitOptions{NoPush: true})
	q := f.queue()
	if r.EntryID != 1 || r.SubmissionType != mergequeue.SubmissionUpdated || r.DedupeKey != "feat:Iold" || q.ActiveCount() != 1 || q.Len() != 1 {
		t.Fatalf("after the upgrade: %+v; %d entries, %d active", r, q.Len(), q.ActiveCount())
	}
	if e := q.Entry(1); e.HeadSHA != f.Git(feat, "rev-parse", "HEAD") {
		t.Fatalf("entry %+v", e)
	}
	if res := f.run(); len(res) != 1 || f.queue().Entry(1).Status != mergequeue.Merged {
		t.Fatalf("run: %+v, entry %s", res, f.queue().Entry(1).Status)
	}
	// merged: the worktree's next change is queued under its own identity
	f.Commit(feat, "g.txt", "g\n", "next change")
	r = f.mustSubmit(feat, SubmitOptions{NoPush: true})
	if r.EntryID != 2 || r.SubmissionType != mergequeue.SubmissionNew || !strings.HasSuffix(r.WorkspaceID, "/feat") || f.queue().ActiveCount() != 1 {
		t.Fatalf("next change: %+v", r)
	}
}
