package train

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

// Trail reads an entry's audit trail from the log: every merge event about
// it, in replay order (lease renewals aside). N numbers events along the log.
func Trail(ctx context.Context, st *store.Store, id int64) ([]mergequeue.AuditStep, error) {
	r, err := st.Log.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	subject := mergequeue.Subject(id)
	steps := []mergequeue.AuditStep{}
	for n := 1; ; n++ {
		ev, _, err := r.Next()
		if err == io.EOF {
			return steps, nil
		}
		if err != nil {
			return nil, err
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ev.Subject != subject || !strings.HasPrefix(ev.Type, "merge.") || ev.Type == mergequeue.EvLeaseRenewed {
			continue
		}
		var d mergequeue.EntryData
		if json.Unmarshal(ev.Data, &d) != nil || d.EntryID != id {
			continue
		}
		step := mergequeue.StepOf(ev, &d)
		step.N = n
		steps = append(steps, step)
	}
}
