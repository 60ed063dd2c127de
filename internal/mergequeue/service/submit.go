// Package service is the merge queue's service: submit, list, change,
// recover and the merge train (rebase in a scratch worktree, the test
// command, the compare-and-swap ref update). It opens the queue, decides
// with the pure functions of mergequeue, appends, and does the side effects
// through the edges (internal/git, internal/proc), each bracketed by an
// intent event before and an outcome event after.
package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// SubmitOptions are the flags of spool merge submit.
type SubmitOptions struct {
	Workspace  string // name or path; empty is the worktree the command runs in
	Priority   *int   // nil: the default for a new entry, unchanged for one in the queue
	BeadID     string
	DedupeKey  string // "workspace:change_id" naming the change across workspaces; empty: computed (workspace identity:change id)
	NoPush     bool
	AutoCommit bool
	// Prefetched, when set, is Prefetch's reading of the current worktree,
	// started while the store was being opened.
	Prefetched <-chan Reading
}

// Reading is a workspace as git showed it: branch, HEAD and uncommitted
// paths (one git status) and the commit's change id (read with go-git),
// read at the same time.
type Reading struct {
	Worktree       git.Worktree
	Dirty          []string
	Err            error
	Head, ChangeID string
	Source         string
	IdentErr       error
}

// Prefetch starts reading the worktree containing dir; submit waits for it.
func Prefetch(ctx context.Context, dir string) <-chan Reading {
	out := make(chan Reading, 1)
	fault.Go(func() { out <- readWorkspace(ctx, git.Worktree{Path: dir, Name: filepath.Base(dir)}, "") })
	return out
}

func readWorkspace(ctx context.Context, w git.Worktree, root string) Reading {
	ident := make(chan Reading, 1)
	wt := w // a copy: Inspect below fills in w
	fault.Go(func() {
		var r Reading
		r.Head, r.ChangeID, r.Source, r.IdentErr = changeID(ctx, wt, "HEAD", root)
		ident <- r
	})
	st, err := git.ReadStatus(ctx, w.Path)
	if err != nil {
		err = mergequeue.HeadSHAExtractionFailed(w.Name, err.Error())
	}
	w.HEAD, w.Branch, w.Detached = st.HEAD, st.Branch, st.Detached
	r := <-ident
	r.Worktree, r.Dirty, r.Err = w, st.Dirty, err
	return r
}

// changeID reads the commit at rev and its change id: the Change-Id
// trailer read in process with go-git, or, in a jj repository with jj
// installed, jj's change id.
func changeID(ctx context.Context, w git.Worktree, rev, root string) (head, id, source string, err error) {
	if git.JJAvailable(w.Path, root) {
		return jjChangeID(ctx, w, rev)
	}
	head, values, err := git.ReadChangeID(ctx, w.Path, rev)
	if err != nil {
		return "", "", "", mergequeue.ChangeIDExtractionFailed(w.Name, err.Error())
	}
	if id, source, err = mergequeue.TrailerChangeID(w.Name, values); err != nil {
		return "", "", "", err
	}
	return head, id, source, nil
}

func jjChangeID(ctx context.Context, w git.Worktree, rev string) (head, id, source string, err error) {
	head, err = git.RevParse(ctx, w.Path, rev)
	if err != nil {
		return "", "", "", mergequeue.ChangeIDExtractionFailed(w.Name, err.Error())
	}
	id, err = git.JJChangeID(ctx, w.Path, head)
	var jerr *git.JJError
	switch {
	case errors.As(err, &jerr):
		return "", "", "", mergequeue.JjExecutionFailed(jerr.Command, jerr.ExitCode, jerr.Stderr)
	case err != nil:
		return "", "", "", mergequeue.ChangeIDExtractionFailed(w.Name, err.Error())
	case id == "":
		return "", "", "", mergequeue.ChangeIDExtractionFailed(w.Name, "jj printed no change id for "+head)
	}
	return head, id, mergequeue.SourceJJ, nil
}

// Response is QueueSubmissionResponse (the fields merge-queue clients
// already read) plus entry ref, workspace identity, dedupe key and head.
type Response struct {
	EntryID        int64                     `json:"entry_id"`
	EntryRef       string                    `json:"entry_ref"` // stable across clones; merge show/cancel/retry take a prefix
	Workspace      string                    `json:"workspace"`
	WorkspaceID    string                    `json:"workspace_id"`
	Status         mergequeue.Status         `json:"status"`
	Position       *int                      `json:"position"`
	PendingCount   int                       `json:"pending_count"`
	SubmissionType mergequeue.SubmissionType `json:"submission_type"`
	SubmittedAt    time.Time                 `json:"submitted_at"`
	BeadID         *string                   `json:"bead_id"`
	DedupeKey      string                    `json:"dedupe_key"`
	HeadSHA        string                    `json:"head_sha"`
	ChangeID       string                    `json:"change_id"`
	Branch         string                    `json:"branch"`
	Pushed         bool                      `json:"pushed"`
	PushNote       string                    `json:"push_note,omitempty"` // why the branch was not pushed
	PendingPush    bool                      `json:"pending_push"`        // queued offline: waiting until the train pushes the branch
}

// firstLine is the first line of git's message.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Submit validates the workspace, reads its identity, pushes its branch and
// queues it. Everything that can fail does so before the one append, so a
// failed submission is atomic and leaves no entry behind; one refused for
// a reason worth auditing (mergequeue.Audited: the push, a dirty worktree,
// another change queued) is recorded as merge.refused, with its context.
func (s *Service) Submit(ctx context.Context, opt SubmitOptions) (*Response, error) {
	var about mergequeue.Refusal
	resp, err := s.submit(ctx, opt, &about)
	if err == nil || about.Workspace == "" {
		return resp, err
	}
	drafts := mergequeue.DecideRefused(about, err)
	if drafts == nil {
		return nil, err
	}
	actor, aerr := s.Actor(ctx)
	if aerr == nil {
		_, _, aerr = s.Store.Write(context.WithoutCancel(ctx), s.Now, actor, []string{mergequeue.Name}, func(*projections.View) ([]eventlog.Draft, error) {
			return drafts, nil
		})
	}
	if aerr != nil && s.Warn != nil {
		s.Warn("the refused submission was not recorded in the log: " + aerr.Error())
	}
	return nil, err
}

func (s *Service) submit(ctx context.Context, opt SubmitOptions, about *mergequeue.Refusal) (*Response, error) {
	st, now := s.Store, s.Now
	actor, err := s.Actor(ctx)
	if err != nil {
		return nil, err
	}
	w, err := findWorkspace(ctx, st, opt.Workspace)
	if err != nil {
		return nil, err
	}
	var rd Reading
	if opt.Prefetched != nil && opt.Workspace == "" {
		rd = <-opt.Prefetched
		rd.Worktree.Path, rd.Worktree.Name = w.Path, w.Name
		if git.JJAvailable(w.Path, st.Repo.Root) && rd.Source != mergequeue.SourceJJ {
			rd = readWorkspace(ctx, w, st.Repo.Root) // the repository root has .jj: read again with jj
		}
	} else {
		rd = readWorkspace(ctx, w, st.Repo.Root)
	}
	w, dirty := rd.Worktree, rd.Dirty
	if rd.Err != nil {
		return nil, rd.Err
	}
	if err := CheckWorkspace(w); err != nil {
		return nil, err
	}
	if err := s.Policy.CheckBranch(w.Name, w.Branch); err != nil {
		return nil, err
	}
	wsID, err := workspaceID(st, w)
	if err != nil {
		return nil, err
	}
	*about = mergequeue.Refusal{Workspace: w.Name, WorkspaceID: wsID, Worktree: w.Path, Branch: w.Branch, HeadSHA: w.HEAD}
	if len(dirty) > 0 && !opt.AutoCommit {
		return nil, mergequeue.WorkspaceNotClean(w.Name, dirty)
	}
	// Like every merge command, recover entries whose runner died first.
	if _, err := recoverExpired(ctx, st, actor, now, s.Warn); err != nil {
		return nil, err
	}
	pol := s.Policy
	request := func(id Reading) mergequeue.SubmitRequest {
		return mergequeue.SubmitRequest{Workspace: w.Name, WorkspaceID: wsID, Worktree: w.Path, Branch: w.Branch, HeadSHA: w.HEAD,
			ChangeID: id.ChangeID, ChangeIDSource: id.Source, DedupeKey: opt.DedupeKey, Priority: opt.Priority, BeadID: opt.BeadID, Actor: actor}
	}
	// askQueue decides without appending, so that a submission the queue
	// refuses changes nothing; the decision that counts is the one under the lock.
	askQueue := func(req mergequeue.SubmitRequest) error {
		v, err := st.Read(ctx, mergequeue.Name)
		if err != nil {
			return err
		}
		_, err = mergequeue.DecideSubmit(queueOf(v), req, pol, now)
		return err
	}
	if len(dirty) > 0 {
		// Before committing in the user's worktree. The commit will change
		// the head, so ask with a head that differs from every real one: an
		// entry the train is processing then refuses here, not after the commit.
		if rd.IdentErr == nil {
			pre := request(rd)
			pre.HeadSHA = strings.Repeat("0", len(w.HEAD))
			if err := askQueue(pre); err != nil {
				return nil, err
			}
		}
		if w.HEAD, err = git.AutoCommit(ctx, w.Path, "spool: auto-commit before merge submit"); err != nil {
			return nil, mergequeue.HeadSHAExtractionFailed(w.Name, err.Error())
		}
	}
	got := rd
	if got.IdentErr == nil && got.Head != w.HEAD { // HEAD moved in between, or auto-committed
		got.Head, got.ChangeID, got.Source, got.IdentErr = changeID(ctx, w, w.HEAD, st.Repo.Root)
	}
	if got.IdentErr != nil {
		return nil, got.IdentErr
	}
	req := request(got)
	about.HeadSHA = w.HEAD // after an auto-commit, the commit it made
	// Before pushing.
	if err := askQueue(req); err != nil {
		return nil, err
	}
	pushed, note := false, ""
	set := mergequeue.SettingsFrom(st.Config)
	switch remote := set.Remote; {
	case opt.NoPush:
		note = "not pushed: --no-push"
	case remote == "":
		note = `not pushed: merge.remote is "" (no remote)`
	case !git.RemoteExists(ctx, w.Path, remote):
		note = fmt.Sprintf(`not pushed: remote %q does not exist (add it, or set merge.remote "" for no remote)`, remote)
	default:
		err := pushBranch(ctx, w, remote)
		if f, ok := fault.As(err); ok && f.Has(mergequeue.CodeRemoteUnreachable) && set.Offline {
			// Offline: an unreachable remote does not refuse the entry; it
			// is queued, waiting for the push, which the train retries with
			// backoff until the remote answers.
			req.PendingPush = fmt.Sprintf("remote %s did not answer (%s); the merge train pushes %s when it does", remote, firstLine(f.Message), w.Branch)
			note = "not pushed: " + mergequeue.WaitPushPending + ": " + req.PendingPush
			break
		}
		if err != nil {
			return nil, err
		}
		pushed = true
	}
	written, err := store.Write(ctx, st, store.Local, now, actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, mergequeue.Submission, error) {
		sub, err := mergequeue.DecideSubmit(queueOf(v), req, pol, now)
		return sub.Drafts, sub, err
	})
	if err != nil {
		return nil, err
	}
	sub, v := written.Result, written.View
	e := queueOf(v).Entry(sub.EntryID)
	resp := &Response{EntryID: e.ID, EntryRef: e.Ref, Workspace: e.Workspace, WorkspaceID: e.WorkspaceID, Status: e.Status, PendingCount: queueOf(v).PendingCount,
		SubmissionType: sub.Type, SubmittedAt: now.UTC(), DedupeKey: e.DedupeKey, HeadSHA: e.HeadSHA,
		ChangeID: e.ChangeID, Branch: e.Branch, Pushed: pushed, PushNote: note, PendingPush: strings.HasPrefix(e.Waiting, mergequeue.WaitPushPending)}
	if st, ok := s.Order(queueOf(v)).Of(e); ok {
		p := st.Position
		resp.Position = &p
	}
	if e.BeadID != "" {
		b := e.BeadID
		resp.BeadID = &b
	}
	return resp, nil
}

// findWorkspace is the worktree to submit: the one the command runs in,
// or the one named, which must be among git worktree list and not
// abandoned (its directory still there).
func findWorkspace(ctx context.Context, st *store.Store, name string) (git.Worktree, error) {
	if name == "" {
		return git.Worktree{Path: st.Repo.WorkTree, Name: filepath.Base(st.Repo.WorkTree)}, nil
	}
	list, err := git.ListWorktrees(ctx, st.Repo.WorkTree)
	if err != nil {
		return git.Worktree{}, mergequeue.IdentityExtractionFailed(name, err.Error())
	}
	w, err := FindWorkspace(list, name, st.Repo.WorkTree)
	if err != nil {
		return w, err
	}
	if w.Prunable || w.Bare {
		return w, CheckWorkspace(w)
	}
	return w, nil
}

// workspaceID is the identity of the workspace at w.Path: this clone's
// writer id and git's id of the worktree (see mergequeue.WorkspaceID).
func workspaceID(st *store.Store, w git.Worktree) (string, error) {
	writer, err := st.Log.WriterID()
	if err != nil {
		return "", mergequeue.IdentityExtractionFailed(w.Name, "writer id: "+err.Error())
	}
	gitID, err := git.WorktreeID(w.Path)
	if err != nil {
		return "", mergequeue.IdentityExtractionFailed(w.Name, "git worktree id: "+err.Error())
	}
	return mergequeue.WorkspaceID(writer, gitID), nil
}

// pushBranch pushes a workspace's branch, telling an unreachable remote
// (which may queue the entry offline) from a rejected push (which queues
// nothing).
func pushBranch(ctx context.Context, w git.Worktree, remote string) error {
	err := git.PushBranch(ctx, w.Path, remote, w.Branch)
	var perr *git.PushError
	switch {
	case errors.As(err, &perr) && perr.Unreachable:
		return mergequeue.RemoteUnreachable(remote, perr.Message)
	case errors.As(err, &perr):
		return mergequeue.BookmarkPushFailed(w.Name, w.Branch, perr.Message)
	}
	return err
}
