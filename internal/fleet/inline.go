package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// Inline sync (sync.mode = inline): the writer files are committed on the
// current branch of the primary worktree — .spool/events alone, through
// an index of spool's own — and that branch is pulled and pushed. The
// remote's events come in as in branch mode; anything else the remote's
// branch has that this one lacks is left for the user to pull, since
// bringing it in would change their work tree.

// Error codes of inline sync.
var (
	CodeSyncNeedsPull = fault.Register(fault.Environment, "sync_needs_pull")
	CodeSyncNoBranch  = fault.Register(fault.Environment, "sync_no_branch")
	CodeSyncBusy      = fault.Register(fault.Environment, "sync_merge_in_progress")
)

// errHeadMoved is an attempt that found HEAD moved under it (the user
// committed): the next one starts from there.
var errHeadMoved = errors.New("HEAD moved during the sync")

// inlineEventsDir is the log's directory in the branch's tree.
const inlineEventsDir = ".spool/events"

// plan is where an inline commit goes: the tree of base with the writer
// files replaced, on parents.
type plan struct {
	base    string
	parents []string
}

// round is what one attempt committed.
type round struct {
	commit   string // the branch's new tip (the old one when nothing changed)
	sent     int
	received int
	snaps    []snapshot
}

func syncInline(ctx context.Context, st *store.Store, o Options) (Result, error) {
	res := Result{Remote: o.Remote, Mode: ModeInline}
	root := st.Repo.Root
	cache := loadCache(st)
	defer cache.save()
	// A commit an earlier attempt put on the branch and could not push is
	// spool's own, unpublished: the next attempt builds on where the branch
	// was before it (from), so a contended sync leaves no merge behind.
	var made, from string
	for attempt := range max(o.Attempts, 1) {
		if err := pause(ctx, attempt); err != nil {
			return res, err
		}
		head, branch, err := currentBranch(ctx, st)
		if err != nil {
			return res, err
		}
		res.Branch, o.Branch = branch, branch
		local := head
		if made != "" && head == made {
			local = from
		}
		tip, remote, err := fetchLocked(ctx, st, o, inlineEventsDir)
		if err != nil {
			return res, err
		}
		p, err := planInline(ctx, root, o, local, tip)
		if err != nil {
			if cache.count(ctx, root, remote) == nil { // status can say how far behind, without reading blobs
				cache.see(TrackingRef(o), tip, remoteLines(remote, cache))
			}
			return res, err
		}
		r, err := commitInline(ctx, st, cache, o, p, head, tip, remote)
		res.Received += r.received
		if errors.Is(err, errHeadMoved) {
			continue
		}
		if err != nil {
			return res, err
		}
		res.Commit = r.commit
		if r.commit == tip {
			return res, nil // the remote has everything
		}
		res.Pushes++
		if err := git.PushCommitHooked(ctx, root, o.Remote, r.commit, branch); err != nil {
			if err := pushFailed(o, err); !errors.Is(err, store.ErrRemoteMoved) {
				return res, err
			}
			if r.commit != local {
				made, from = r.commit, local
			}
			continue
		}
		res.Sent = r.sent
		accepted(ctx, st, o, cache, r.commit, r.snaps)
		return res, nil
	}
	return res, contended(o, res.Pushes)
}

// currentBranch is the primary worktree's HEAD commit and branch; a
// detached HEAD, an unborn branch or a merge in progress has no branch
// spool may commit on.
func currentBranch(ctx context.Context, st *store.Store) (head, branch string, err error) {
	root := st.Repo.Root
	if op := git.InProgress(st.Repo.CommonDir); op != "" {
		return "", "", fault.New(CodeSyncBusy, nil, fmt.Sprintf("a %s is in progress in %s: finish or abort it, then sync", op, root),
			"operation", op)
	}
	head, ref, err := git.Head(ctx, root)
	if err != nil {
		return "", "", err
	}
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	switch {
	case !ok:
		return "", "", fault.New(CodeSyncNoBranch, nil, fmt.Sprintf("HEAD is detached in %s: inline sync commits on the current branch; check out a branch (or set sync.mode branch)", root))
	case head == "":
		return "", "", fault.New(CodeSyncNoBranch, nil, fmt.Sprintf("branch %s has no commit yet: commit once, then sync", branch), "branch", branch)
	}
	return head, branch, nil
}

// planInline decides how the branch (at local) takes in the remote's tip.
// The remote's changes since the two met may touch writer files only:
// those are integrated into the log and committed with it. Anything else
// would have to change the user's work tree and index, so the user pulls.
func planInline(ctx context.Context, root string, o Options, local, tip string) (plan, error) {
	if tip == "" || tip == local {
		return plan{base: local, parents: []string{local}}, nil
	}
	base, err := git.MergeBase(ctx, root, local, tip)
	if err != nil {
		return plan{}, err
	}
	if base == tip { // only ahead
		return plan{base: local, parents: []string{local}}, nil
	}
	remote := o.Remote + "/" + o.Branch
	if base == "" {
		return plan{}, fault.New(CodeSyncNeedsPull, nil, fmt.Sprintf("%s shares no history with %s: pull or merge it yourself, then sync", remote, o.Branch),
			"remote", o.Remote, "branch", o.Branch)
	}
	changed, err := git.ChangedPaths(ctx, root, base, tip)
	if err != nil {
		return plan{}, err
	}
	var others []string
	for _, p := range changed {
		if dir, name := filepath.Split(p); dir != inlineEventsDir+"/" || !validFile(name) {
			others = append(others, p)
		}
	}
	if len(others) > 0 {
		shown := others[:min(len(others), 5)]
		more := ""
		if len(others) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(others)-len(shown))
		}
		return plan{}, fault.New(CodeSyncNeedsPull, nil,
			fmt.Sprintf("%s has changes outside .spool/events that %s lacks (%s%s): pull them (git pull), then sync again", remote, o.Branch, strings.Join(shown, ", "), more),
			"remote", o.Remote, "branch", o.Branch, "paths", shown)
	}
	if base == local { // only behind: the remote's events, then ours, on its tip
		return plan{base: tip, parents: []string{tip}}, nil
	}
	return plan{base: local, parents: []string{local, tip}}, nil
}

// commitInline brings the remote's events into the log and commits the
// log on p under the log's lock, so no append lands half in a commit;
// the user's index is made to agree for the writer files alone, then
// HEAD moves from head to the commit if it is still there.
func commitInline(ctx context.Context, st *store.Store, c *cache, o Options, p plan, head, tip string, remote map[string]git.Blob) (round, error) {
	root := st.Repo.Root
	unlock, err := st.Log.Lock(ctx)
	if err != nil {
		return round{}, err
	}
	defer unlock()
	// A cancelled sync (SIGTERM to spool watch, ^C) finishes this local
	// part rather than kill git holding the user's index or HEAD lock.
	ctx = context.WithoutCancel(ctx)
	var r round
	if r.snaps, r.received, err = integrateLocked(ctx, st, remote, c); err != nil {
		return r, err
	}
	c.see(TrackingRef(o), tip, remoteLines(remote, c))
	if r.sent, err = storeBlobs(ctx, root, r.snaps, remote, c); err != nil {
		return r, err
	}
	files := remote
	if p.base != tip {
		if files, err = git.TreeFiles(ctx, root, p.base, inlineEventsDir); err != nil {
			return r, err
		}
	}
	var changes []git.IndexEntry
	for _, s := range r.snaps {
		if files[s.name].Hash != s.hash {
			changes = append(changes, git.IndexEntry{Path: inlineEventsDir + "/" + s.name, Hash: s.hash})
		}
	}
	r.commit = p.base
	if len(changes) > 0 || len(p.parents) > 1 {
		msg := fmt.Sprintf("spool sync: %d events", r.sent)
		if len(p.parents) > 1 {
			msg += fmt.Sprintf(", merging %s/%s (its events)", o.Remote, o.Branch)
		}
		if r.commit, err = commitOn(ctx, st, p, changes, msg); err != nil {
			return r, err
		}
	}
	if r.commit == head {
		return r, nil
	}
	if err := agreeIndex(ctx, root, files, changes); err != nil {
		return r, err
	}
	if err := git.UpdateRef(ctx, root, "HEAD", r.commit, head, "spool sync"); err != nil {
		if now, _, herr := git.Head(ctx, root); herr == nil && now != head {
			return r, errHeadMoved // the user committed meanwhile: start again from there
		}
		return r, err
	}
	return r, nil
}

// commitOn writes p's base tree with changes through an index of spool's
// own (the user's index holds what they staged) and commits it.
func commitOn(ctx context.Context, st *store.Store, p plan, changes []git.IndexEntry, msg string) (string, error) {
	root := st.Repo.Root
	index := filepath.Join(st.Repo.PrivateDir(), "sync-index")
	// Under the log's lock no other sync uses it: a lock file there is a
	// killed sync's, and would stop every later one.
	os.Remove(index + ".lock")
	defer os.Remove(index)
	if err := git.ReadTreeIndex(ctx, root, index, p.base); err != nil {
		return "", err
	}
	if err := git.SetIndex(ctx, root, index, changes); err != nil {
		return "", err
	}
	tree, err := git.WriteIndexTree(ctx, root, index)
	if err != nil {
		return "", err
	}
	return git.CommitTreeOn(ctx, root, tree, msg, p.parents...)
}

// agreeIndex sets the user's index entries of the writer files to the new
// commit's, where they differ, and leaves every other entry (what the user
// staged) as it is: after HEAD moves, git status shows the log clean.
func agreeIndex(ctx context.Context, root string, files map[string]git.Blob, changes []git.IndexEntry) error {
	want := map[string]string{}
	for name, b := range files {
		if validFile(name) {
			want[inlineEventsDir+"/"+name] = b.Hash
		}
	}
	for _, e := range changes {
		want[e.Path] = e.Hash
	}
	have, err := git.IndexFiles(ctx, root, "", inlineEventsDir+"/")
	if err != nil {
		return err
	}
	var set []git.IndexEntry
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if have[path] != want[path] {
			set = append(set, git.IndexEntry{Path: path, Hash: want[path]})
		}
	}
	// Another git command may hold the index a moment (the user's own).
	for try := 0; ; try++ {
		err := git.SetIndex(ctx, root, "", set)
		if err == nil || !git.IndexLocked(err) || try == 40 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
