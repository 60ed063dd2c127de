package projections

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Difference is a projection file that does not equal a fresh replay.
type Difference struct {
	Projection string `json:"projection"`
	Path       string `json:"file"`
	Problem    string `json:"problem"`
}

// Checker is a projection whose state has invariants of its own (the
// merge queue's: one active entry per dedupe key and per workspace,
// positions 1..N in priority order, an audit step for every status change):
// Verify reports what a fresh replay breaks.
type Checker interface {
	Invariants() []string
}

// Verification is what VerifyAll found.
type Verification struct {
	Events      int // events the fresh replay applied
	Files       int // writer files it read
	Differences []Difference
	Stale       []string
	Broken      []string // invariants the fresh replay breaks, "name: …" each
	// Unclean is set when the replay met what eventlog.Check reports but
	// readers pass over: a torn tail, an unfinished batch, a copy of a line
	// dropped. The replay itself is good; the log is not clean.
	Unclean bool
}

// detailMax bounds the files whose first difference is named as a JSON
// path (both sides are decoded whole for it); a larger file's is named by
// line and byte. A variable for tests.
var detailMax = 4 << 20

// Verify is VerifyAll's differences, stale projections and broken invariants.
func (en *Engine) Verify(ctx context.Context) (diffs []Difference, stale, broken []string, err error) {
	v, err := en.VerifyAll(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return v.Differences, v.Stale, v.Broken, nil
}

// VerifyAll replays the log in memory and compares every projection on disk
// with it, writing nothing. A work-tree file that is missing (git clean -x
// took it) only makes its projection stale: the next view of it writes it
// again (WorkTreePaths). Files are compared when their projection's
// snapshot is up to date; derived state is compared then too, and when it
// is behind, after catching it up in memory (comparing the incremental fold
// with the fresh one); a snapshot that is missing, or that would be rebuilt
// from the whole log (a file rewritten under it), has only the fresh
// replay to compare with and is just reported stale, as are the others
// behind the log (the next command brings them up to date).
//
// Memory stays within the projections' own: the snapshots are checked one
// at a time before the replay, and only a digest of each is kept; files are
// compared with the disk as they are rendered (streamed, for a FileWriter);
// each fresh projection is let go once compared.
func (en *Engine) VerifyAll(ctx context.Context) (*Verification, error) {
	type diskSide struct {
		current bool
		state   bool // the snapshot caught up: compare its state
		sum     [sha256.Size]byte
		events  int
	}
	disk := make([]diskSide, len(en.Specs))
	var damaged []Difference
	for i, s := range en.Specs {
		it := &item{spec: s}
		if !en.loadSnapshot(it) {
			if it.damaged {
				damaged = append(damaged, Difference{s.Name, en.snapshotPath(s.Name),
					"does not match its checksum: changed by something other than spool (the next command rebuilds it from the log)"})
			}
			continue // missing: stale
		}
		st, err := en.check(it)
		if err != nil {
			return nil, err
		}
		switch st {
		case rewritten:
			continue // a rebuild from the whole log is what the fresh replay is
		case behind:
			// Bring the stale snapshot up to date in memory only: comparing
			// it with the fresh replay still proves the incremental fold right.
			needRebuild, err := en.apply(ctx, []*item{it}, false, nil)
			if err != nil {
				return nil, err
			}
			if len(needRebuild) > 0 {
				continue // merged events sort before its checkpoint: the same
			}
		case upToDate:
			// With an overlay over it, the snapshot is not the state and
			// the files lag: the state is compared, as one behind is.
			disk[i].current = it.overlaid == it.saved
		}
		var sum [sha256.Size]byte
		if rc, ok := it.proj.(RecordChecker); ok && disk[i].current {
			rc.CheckRecords()
			sum, err = fileDigest(en.snapshotPath(s.Name), it.body)
		} else {
			sum, err = stateDigest(s.Name, it.proj, en.tmpDir())
		}
		if err != nil {
			return nil, err
		}
		disk[i].state, disk[i].sum, disk[i].events = true, sum, it.cp.Events
	}

	var info readInfo
	fresh, err := en.fold(ctx, nil, true, &info) // only compared: its state may spill
	if err != nil {
		return nil, err
	}
	res := &Verification{Events: info.events, Files: info.files, Unclean: len(info.torn) > 0 || info.dropped > 0, Differences: damaged}
	for i, it := range fresh.items {
		if c, ok := it.proj.(Checker); ok {
			for _, inv := range c.Invariants() {
				res.Broken = append(res.Broken, it.spec.Name+": "+inv)
			}
		}
		d := disk[i]
		stale := !d.current
		var diffs []Difference
		files := func() error {
			return eachFile(it.spec.Name, it.proj, func(path string, workTree bool, write func(io.Writer) error) error {
				if !d.current {
					return nil // behind the log: the next command writes it
				}
				full := en.FilePath(path, workTree)
				if workTree && !en.inWorkTree(full) {
					diffs = append(diffs, Difference{it.spec.Name, en.shown(full), "not written: a symbolic link on the way leads outside the work tree"})
					return nil
				}
				problem, err := en.compareFile(full, write)
				if err == nil && problem == missingFile && workTree {
					stale = true
					return nil
				}
				if err == nil && problem != "" {
					diffs = append(diffs, Difference{it.spec.Name, en.shown(full), problem})
				}
				return err
			})
		}
		// As in Save, a Freezer's files are compared while its state is
		// digested.
		filesDone := alongside(en.OnLargeSave, it.proj, files)
		var sum [sha256.Size]byte
		var sumErr error
		if d.state {
			sum, sumErr = stateDigest(it.spec.Name, it.proj, en.tmpDir())
		}
		if err := cmp.Or(filesDone(), sumErr); err != nil {
			return nil, err
		}
		res.Differences = append(res.Differences, diffs...)
		if stale {
			res.Stale = append(res.Stale, it.spec.Name)
		}
		if d.state {
			if sum != d.sum || d.events != it.cp.Events {
				res.Differences = append(res.Differences, Difference{it.spec.Name, en.snapshotPath(it.spec.Name),
					fmt.Sprintf("snapshot state differs from a fresh replay (%d events applied, replay has %d)", d.events, it.cp.Events)})
			}
		}
		fresh.items[i] = nil // compared: let it go
	}
	return res, nil
}

// missingFile is compareFile's problem with a file that is not there.
const missingFile = "missing"

// shown is a file's path as reports give it: relative to the repository
// root when it is under it.
func (en *Engine) shown(full string) string {
	if rel, err := filepath.Rel(en.Root, full); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return full
}

// compareFile compares the file at full with what write writes: "" when
// equal, else the problem.
func (en *Engine) compareFile(full string, write func(io.Writer) error) (string, error) {
	same, err := compareWith(full)
	if err != nil {
		return "", err
	}
	defer same.Close()
	keep := &capped{max: detailMax}
	if err := write(io.MultiWriter(same, keep)); err != nil {
		return "", err
	}
	missing, equal, where, err := same.result()
	switch {
	case err != nil:
		return "", err
	case missing:
		return missingFile, nil
	case equal:
		return "", nil
	}
	problem := "differs from a fresh replay"
	if st, err := os.Stat(full); err == nil && !keep.over && st.Size() <= int64(detailMax) {
		got, err := os.ReadFile(full)
		if err != nil {
			return "", err
		}
		if w, ok := firstDifference(got, keep.b); ok {
			return problem + ": " + w, nil
		}
		return problem, nil
	}
	return problem + ": " + where, nil
}

// DamagedSnapshots says which snapshots on disk fail their checks, and
// why: a state loaded whole whose checksum is not its content's, or a
// table whose records fail theirs. The next command rebuilds the first
// kind from the log; spool replay the second.
func (en *Engine) DamagedSnapshots() []Difference {
	quiet := *en
	quiet.Warn = nil
	var out []Difference
	for _, s := range en.Specs {
		it := &item{spec: s}
		if !quiet.loadSnapshot(it) {
			if it.damaged {
				out = append(out, Difference{s.Name, en.snapshotPath(s.Name), "does not match its checksum (the next command rebuilds it from the log)"})
			}
			continue
		}
		if rc, ok := it.proj.(RecordChecker); ok {
			if err := checkRecords(rc); err != nil {
				out = append(out, Difference{s.Name, en.snapshotPath(s.Name), err.Error()})
			}
		}
	}
	return out
}

// checkRecords is CheckRecords with a damaged record's panic as an error.
func checkRecords(rc RecordChecker) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	rc.CheckRecords()
	return nil
}
