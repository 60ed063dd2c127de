package projections_test

import (
	"testing"

	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// FuzzStats folds hostile events into the log's stats, which count every
// event whatever its type: no panic, no allocation beyond a bound per
// event, a snapshot that round-trips (projectiontest.Hostile).
func FuzzStats(f *testing.F) {
	h := projectiontest.Hostile{
		Specs: []projections.Spec{projections.StatsSpec},
		Types: []string{"task.created", "merge.submitted", "job.submitted", "x.y", "deploy.finished"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
