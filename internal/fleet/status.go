package fleet

import (
	"context"
	"errors"
	"maps"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// Status is how far the local log is ahead of and behind the remote, as
// the last sync saw the remote: spool status reads no network.
type Status struct {
	Remote string `json:"remote"` // "" when the clone has none
	Branch string `json:"branch"`
	Synced bool   `json:"synced"`           // a sync has seen the remote's branch
	Commit string `json:"commit,omitempty"` // the remote's tip then
	Ahead  *int   `json:"ahead,omitempty"`  // events here the remote lacked
	Behind *int   `json:"behind,omitempty"` // events there this log lacks
}

// seen is the remote's branch as a sync last saw it: its tip and the
// events of each writer there, so that status counts without reading
// a blob.
type seen struct {
	Commit string         `json:"commit"`
	Lines  map[string]int `json:"lines"`
}

// see records the remote's tip and its files' events (nothing when the
// remote has no branch yet).
func (c *cache) see(ref, commit string, lines map[string]int) {
	if commit == "" || lines == nil {
		return
	}
	if old, ok := c.Seen[ref]; ok && old.Commit == commit && maps.Equal(old.Lines, lines) {
		return
	}
	if c.Seen == nil {
		c.Seen = map[string]seen{}
	}
	c.Seen[ref], c.dirty = seen{Commit: commit, Lines: lines}, true
}

// remoteLines counts the events of the remote's writer files from the
// blobs read or cached; nil when one is unknown.
func remoteLines(remote map[string]git.Blob, c *cache) map[string]int {
	lines := map[string]int{}
	for name, b := range remote {
		if !validFile(name) {
			continue
		}
		n, ok := c.lines[b.Hash]
		if !ok {
			return nil
		}
		lines[eventlog.WriterOf(name)] = n
	}
	return lines
}

// count reads the remote's writer files whose events it does not know.
func (c *cache) count(ctx context.Context, repo string, remote map[string]git.Blob) error {
	for name, b := range remote {
		if _, ok := c.lines[b.Hash]; ok || !validFile(name) {
			continue
		}
		n, err := c.fileLines(ctx, repo, b) // a torn last line has no newline: Whole's count
		if errors.Is(err, git.ErrNotAFile) {
			n, err = 0, nil // quarantined when received: no events
		}
		if err != nil {
			return err
		}
		c.lines[b.Hash] = n
	}
	return nil
}

// fileLines counts the lines of a file of the branch; of a file in parts,
// only the parts not counted before are read (a sync, or a fetch, brings a
// version of a 290 MB file whose parts but the last the cache has counted).
func (c *cache) fileLines(ctx context.Context, repo string, b git.Blob) (int, error) {
	if !b.Parts {
		return git.BlobLines(ctx, repo, b.Hash)
	}
	parts, err := git.FileParts(ctx, repo, b.Hash)
	if err != nil {
		return 0, err
	}
	if c.Parts == nil || len(c.Parts) > maxCachedParts {
		c.Parts = map[string]int{} // counted again, once
	}
	n := 0
	var unknown []string
	for _, p := range parts {
		if k, ok := c.Parts[p.Hash]; ok {
			n += k
		} else {
			unknown = append(unknown, p.Hash)
		}
	}
	counts, err := git.BlobsLines(ctx, repo, unknown)
	if err != nil {
		return 0, err
	}
	for i, k := range counts {
		n += k
		if len(c.Parts) < maxCachedParts {
			c.Parts[unknown[i]], c.dirty = k, true
		}
	}
	return n, nil
}

// maxCachedParts bounds the parts whose lines the cache keeps: a file of a
// million events has 70, and each sync adds a last part.
const maxCachedParts = 4096

func snapLines(snaps []snapshot) map[string]int {
	lines := make(map[string]int, len(snaps))
	for _, s := range snaps {
		if validFile(s.name) {
			lines[eventlog.WriterOf(s.name)] = s.lines
		}
	}
	return lines
}

// SyncStatus compares local (events per writer, from the stats projection)
// with the remote's branch as last fetched: the sync cache when it knows
// that commit, otherwise the tracking ref's tree.
func SyncStatus(ctx context.Context, st *store.Store, local map[string]int) (Status, error) {
	o, err := OptionsFrom(ctx, st, "")
	s := Status{Remote: o.Remote, Branch: o.Branch}
	if err != nil || o.Remote == "" {
		return s, err
	}
	// spool's copy of the remote's branch (its last sync or claim), or git's
	// (the user's last fetch or pull): the remote's branch only grows, so
	// the copy with more events is the later one.
	c := loadCache(st)
	defer c.save() // the parts counted (a cache: a lost write costs a count)
	var commit string
	var remote map[string]int
	for _, ref := range []string{TrackingRef(o), "refs/remotes/" + o.Remote + "/" + o.Branch} {
		tip, ok := git.ReadRef(ctx, st.Repo, ref)
		if !ok || tip == commit {
			continue
		}
		lines, err := linesAt(ctx, st.Repo.Root, tip, eventsDir, c)
		if err != nil {
			return s, err
		}
		if remote == nil || total(lines) > total(remote) {
			commit, remote = tip, lines
		}
	}
	if remote == nil {
		return s, nil // never synced (or the refs are gone): nothing to compare with
	}
	ahead, behind := aheadBehind(local, remote)
	s.Synced, s.Commit, s.Ahead, s.Behind = true, commit, &ahead, &behind
	return s, nil
}

// linesAt is the events per writer in commit's writer files under dir.
func linesAt(ctx context.Context, repo, commit, dir string, c *cache) (map[string]int, error) {
	for _, s := range c.Seen {
		if s.Commit == commit {
			return s.Lines, nil
		}
	}
	files, err := git.TreeFiles(ctx, repo, commit, dir)
	if err != nil {
		return nil, err
	}
	if err := c.count(ctx, repo, files); err != nil {
		return nil, err
	}
	return remoteLines(files, c), nil
}

// aheadBehind sums, writer by writer, the events one side has beyond the
// other. A writer file only grows, so counts tell; a diverged file (one
// writer on two machines) counts as its longer side.
func aheadBehind(local, remote map[string]int) (ahead, behind int) {
	for w, n := range local {
		ahead += max(n-remote[w], 0)
	}
	for w, n := range remote {
		behind += max(n-local[w], 0)
	}
	return ahead, behind
}

func total(lines map[string]int) (n int) {
	for _, k := range lines {
		n += k
	}
	return n
}
