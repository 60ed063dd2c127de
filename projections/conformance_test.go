package projections_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// Stats counts every event, whatever its type: it needs no model, only a
// variety of types, subjects, actors and data.
func TestStatsConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{
		Spec:         projections.StatsSpec,
		NewClone:     func(string) projectiontest.Clone { return projectiontest.Commands(statsCommand) },
		FoldsUnknown: true,
	})
}

var statsTypes = []string{"deploy.started", "deploy.finished", "build.failed", "ci.run_queued", "note.added"}

func statsCommand(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	actor := []string{"ada@example.com", "bob@example.com", "Zoë <zoe@example.com>"}[r.IntN(3)]
	var drafts []eventlog.Draft
	for range 1 + r.IntN(3) {
		drafts = append(drafts, eventlog.Draft{
			Type:    statsTypes[r.IntN(len(statsTypes))],
			Subject: fmt.Sprintf("web-%d", r.IntN(4)),
			Data:    map[string]any{"version": fmt.Sprintf("1.%d.%d", r.IntN(3), r.IntN(10)), "at": now.Format(time.RFC3339)},
		})
	}
	return actor, drafts, nil
}
