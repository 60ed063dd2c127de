package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
)

// RepairFork gives this clone a new writer id when its own file forked on
// the sync branch: a copy of the branch holds this writer's file with
// lines this clone never wrote after lines both share (its files were
// copied to another machine, which wrote as the same writer and pushed
// first). The events this clone wrote after the shared lines are written
// again as the new writer's (eventlog.Session.Rehome), so nothing is lost
// and both machines' events reach everyone. It is refused when any copy of
// the branch holds one of those events: then they were shared, and the
// copy that differs rewrote them (spool sync puts them back). It returns
// nil when the own file forked nowhere.
func (s *Store) RepairFork(ctx context.Context, now time.Time) (*eventlog.FileRepair, error) {
	sess, err := s.Log.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	name := sess.Writer() + eventlog.Ext
	path := filepath.Join(s.Log.Dir(), name)
	local, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	local = eventlog.Whole(local)
	refs, err := git.BranchCopies(ctx, s.Repo.CommonDir, SettingsFrom(s.Config).SyncBranch)
	if err != nil {
		return nil, err
	}
	keep, forkedOn := int64(-1), ""
	var copies [][]byte
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		files, err := git.TreeFiles(ctx, s.Repo.Root, refs[ref], SyncBranchDir)
		if err != nil {
			return nil, err
		}
		blob, ok := files[name]
		if !ok {
			continue
		}
		theirs, err := git.ReadBlob(ctx, s.Repo.Root, blob.Hash)
		if errors.Is(err, git.ErrNotAFile) {
			continue // no events: quarantined when received
		}
		if err != nil {
			return nil, err
		}
		theirs = eventlog.Whole(theirs)
		copies = append(copies, theirs)
		if bytes.HasPrefix(local, theirs) || bytes.HasPrefix(theirs, local) || len(eventlog.CheckCopy(name, theirs)) > 0 {
			continue
		}
		line, _, _ := eventlog.FirstDifference(local, theirs)
		if at := lineStart(local, line); keep < 0 || at < keep {
			keep, forkedOn = at, shortRef(ref)
		}
	}
	if keep < 0 {
		return nil, nil
	}
	rep := &eventlog.FileRepair{Path: path, Fixed: []string{}, Left: []string{}}
	first := local[keep : keep+int64(bytes.IndexByte(local[keep:], '\n'))+1]
	for _, c := range copies {
		if bytes.Contains(c, first) {
			e, _ := eventlog.Decode(first)
			rep.Left = append(rep.Left, fmt.Sprintf("%s differs from this clone's own file from line %d on, but event %s, which this clone wrote there, "+
				"is on a copy of the sync branch: it was shared, so the copy that differs rewrote it (spool sync puts the history back); "+
				"this clone keeps its writer id", forkedOn, bytes.Count(local[:keep], []byte{'\n'})+1, e.ID))
			return rep, nil
		}
	}
	done, err := sess.Rehome(keep, now)
	if err != nil {
		return nil, err
	}
	rep.Backup = done.Backup
	rep.Fixed = append(rep.Fixed, fmt.Sprintf("%s holds this writer's file as another machine wrote it after line %d (a copy of this clone): "+
		"this clone now writes as writer %s, and its %d events after that line are written again as %s's", forkedOn,
		bytes.Count(local[:keep], []byte{'\n'}), done.To, done.Moved, done.To))
	return rep, nil
}

// lineStart is where line n (1, 2, …) of b starts.
func lineStart(b []byte, n int) int64 {
	at := 0
	for range n - 1 {
		at += bytes.IndexByte(b[at:], '\n') + 1
	}
	return int64(at)
}
