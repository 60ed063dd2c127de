package projections

import (
	"bytes"
	"context"
	"fmt"
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
// merge queue's, seed 002 §5): Verify reports what a fresh replay breaks.
type Checker interface {
	Invariants() []string
}

// Verify replays the log in memory and compares every projection on disk with
// it, writing nothing. Tracked files are always compared. Derived state is
// compared when its snapshot claims to be up to date; a stale or missing
// snapshot is reported in stale (it is rebuilt by the next command).
// broken lists the invariants the fresh replay breaks, "name: …" each.
func (en *Engine) Verify(ctx context.Context) (diffs []Difference, stale, broken []string, err error) {
	fresh, err := en.Replay(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, it := range fresh.items {
		if c, ok := it.proj.(Checker); ok {
			for _, inv := range c.Invariants() {
				broken = append(broken, it.spec.Name+": "+inv)
			}
		}
	}
	disk, err := en.Open()
	if err != nil {
		return nil, nil, nil, err
	}
	for i, it := range fresh.items {
		want, err := it.proj.Files()
		if err != nil {
			return nil, nil, nil, err
		}
		d := disk.items[i]
		current := !d.dirty
		if current {
			st, err := en.check(d)
			if err != nil {
				return nil, nil, nil, err
			}
			current = st == upToDate
		}
		if !current {
			stale = append(stale, it.spec.Name)
		}
		for _, f := range want {
			if !current && !f.Tracked {
				continue
			}
			got, err := os.ReadFile(filepath.Join(en.Root, filepath.FromSlash(f.Path)))
			switch {
			case os.IsNotExist(err):
				diffs = append(diffs, Difference{it.spec.Name, f.Path, "missing"})
			case err != nil:
				return nil, nil, nil, err
			case !bytes.Equal(got, f.Data):
				problem := "differs from a fresh replay"
				if where, ok := firstDifference(got, f.Data); ok {
					problem += ": " + where
				}
				diffs = append(diffs, Difference{it.spec.Name, f.Path, problem})
			}
		}
		if !current {
			// Bring the stale snapshot up to date in memory only: comparing it
			// with the fresh replay still proves the incremental fold right.
			if _, err := disk.catchUp(ctx, d); err != nil {
				return nil, nil, nil, err
			}
		}
		a, err := it.proj.MarshalState()
		if err != nil {
			return nil, nil, nil, err
		}
		b, err := d.proj.MarshalState()
		if err != nil {
			return nil, nil, nil, err
		}
		if !bytes.Equal(a, b) || d.cp.Events != it.cp.Events {
			diffs = append(diffs, Difference{it.spec.Name, en.snapshotPath(it.spec.Name),
				fmt.Sprintf("snapshot state differs from a fresh replay (%d events applied, replay has %d)", d.cp.Events, it.cp.Events)})
		}
	}
	return diffs, stale, broken, nil
}
