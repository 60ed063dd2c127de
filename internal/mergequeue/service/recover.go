package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// deadRunners are the runners of processing entries whose process, as
// their claim recorded it, is certainly gone from this machine
// (proc.Gone): their entries need not wait for the lease. A runner of
// another machine or boot, a live one (this process included) and one
// whose claim recorded no process are never among them.
func deadRunners(q *mergequeue.State) map[string]bool {
	var dead map[string]bool
	for runner, rec := range q.Holders() {
		if proc.Gone(proc.Record(rec)) { // the same fields: the log's record of proc's
			if dead == nil {
				dead = map[string]bool{}
			}
			dead[runner] = true
		}
	}
	return dead
}

// NeedsRecovery reports whether recoverExpired has something to do: an
// entry whose lease ran out, or whose runner died on this machine.
func NeedsRecovery(q *mergequeue.State, now time.Time) bool {
	return len(q.Recoverable(now, deadRunners(q))) > 0
}

// recoverExpired recovers every entry whose lease has expired, or whose
// runner is certainly dead (deadRunners; see DecideRecover). It asks git
// whether the target contains the tested commit of entries that died in
// merging, and afterwards cleans up their scratch worktrees and ends test
// commands that outlived their runner. What it cannot finish of a merge
// the runner began goes to warn (nil: dropped).
func recoverExpired(ctx context.Context, st *store.Store, actor string, now time.Time, warn func(string)) ([]eventlog.Event, error) {
	if warn == nil {
		warn = func(string) {}
	}
	v, err := st.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil, err
	}
	dead := deadRunners(queueOf(v))
	expired := queueOf(v).Recoverable(now, dead)
	if len(expired) == 0 {
		return nil, nil
	}
	killRecordedGroups(expired)
	merged := map[int64]bool{}
	for _, e := range expired {
		if e.Status != mergequeue.Merging || e.TestedSHA == "" {
			merged[e.ID] = false
			continue
		}
		ok, err := git.Contains(ctx, st.Repo.Root, "refs/heads/"+targetOf(st, e), e.TestedSHA)
		switch {
		case err == nil:
			merged[e.ID] = ok
		case errors.Is(err, git.ErrRefNotFound):
			// The target branch is gone (deleted, renamed): the tested commit
			// is in no target, and waiting would leave the entry stuck.
			merged[e.ID] = false
		default:
			// Unknown (the tested commit not fetched into this clone, a git
			// failure): the push may have landed, so leave it for a later
			// recovery rather than risk merging it twice.
		}
	}
	pol := mergequeue.PolicyFrom(st.Config)
	w, err := store.Write(ctx, st, store.Claiming, now, actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, []string, error) {
		q := queueOf(v)
		drafts := mergequeue.DecideRecover(q, merged, dead, pol, now)
		var scratch []string
		for _, d := range drafts {
			if d.Type == mergequeue.EvRecovered {
				e := q.Entry(d.Data.(mergequeue.EntryData).EntryID)
				// The path this clone's train would have used, never the
				// scratch_dir the event names: anyone who can push writes
				// events, and recovery removes what it is given.
				scratch = append(scratch, ScratchPath(st.Repo, e.ID, e.Ref))
			}
		}
		return drafts, scratch, nil
	})
	if err != nil {
		return nil, err
	}
	events, v := w.Events, w.View
	for _, dir := range w.Result {
		if _, err := os.Lstat(dir); err == nil { // a runner of another clone left none here
			git.RemoveScratch(ctx, st.Repo.Root, dir)
		}
	}
	// A runner that died after moving the target but before pushing it or
	// updating the checked-out worktree: finish those, best effort.
	for _, ev := range events {
		if ev.Type != mergequeue.EvRecovered {
			continue
		}
		e := queueOf(v).Entry(entryIDOf(ev))
		if e == nil || e.Status != mergequeue.Merged {
			continue
		}
		target := targetOf(st, e)
		from := e.TestedAgainstSHA // where the runner moved the target from
		if e.TargetFromSHA != "" {
			from = e.TargetFromSHA // the local target lagged behind the remote's tip, the base
		}
		if err := git.SyncCheckout(ctx, st.Repo.Root, target, from, e.TestedSHA); err != nil {
			// The target moved and its checkout did not: that worktree shows
			// the merge staged in reverse until it is brought along.
			warn(fmt.Sprintf("merge entry %d: recovered as merged, but the worktree with %s checked out was not brought along (%v); "+
				"once those paths are clean, run there: git read-tree -m -u %s %s", e.ID, target, err, from, e.TestedSHA))
		}
		if remote := mergequeue.SettingsFrom(st.Config).Remote; git.RemoteExists(ctx, st.Repo.Root, remote) {
			if err := git.PushRef(ctx, st.Repo.Root, remote, "refs/heads/"+target); err != nil {
				warn(fmt.Sprintf("merge entry %d: recovered as merged, but pushing %s to %s failed (%v); push it by hand", e.ID, target, remote, err))
			}
		}
	}
	return events, nil
}

// ScratchPath is the train's temporary worktree for an entry:
// .git/spool/scratch/merge-<ref>, the ref (the id of the entry's
// merge.submitted event, hex, as the log's reader checks every id) naming
// the entry for good even when merged logs renumber it; an entry whose ref
// is not hex is named by its number. Derived from what spool controls, so
// that removing it can only ever remove spool's own scratch.
func ScratchPath(r *git.Repo, id int64, ref string) string {
	name := "merge-" + strconv.FormatInt(id, 10)
	if isHex(ref) {
		name = "merge-" + ref
	}
	return filepath.Join(store.ScratchDir(r), name)
}

func isHex(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// killRecordedGroups ends the test commands that outlived their runner:
// the group dies with its runner, unless its guard was stopped or killed on
// its own. Only a group that is alive and still ours (proc.Alive) is killed.
func killRecordedGroups(expired []*mergequeue.Entry) {
	for _, e := range expired {
		if e.Proc != nil {
			proc.KillGroup(proc.Record(*e.Proc)) // the same fields: the log's record of proc's
		}
	}
}

// targetOf is the branch e merges into: its own, else merge.target.
func targetOf(st *store.Store, e *mergequeue.Entry) string {
	if e.Target != "" {
		return e.Target
	}
	return mergequeue.PolicyFrom(st.Config).Target
}

func entryIDOf(ev eventlog.Event) int64 {
	var id int64
	fmt.Sscanf(ev.Subject, "merge/%d", &id)
	return id
}
