package workqueue

import (
	"sort"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// IDsName is the projection of every task id: all spool task add needs, in a
// snapshot a few bytes per task, so adding a task reads 100 KB rather than
// the megabytes of the tasks themselves.
const IDsName = "task-ids"

// IDsSpec registers it; saves are amortized like the tasks'.
var IDsSpec = projections.Spec{Name: IDsName, Version: 1, Amortize: 1000, New: func() projections.Projection { return &IDsProjection{} }}

// IDsProjection holds the snapshot's ids, newline-separated and sorted, as
// read, plus ids created since.
type IDsProjection struct {
	saved string // "\n" + ids joined by "\n" + "\n", or ""
	count int
	fresh map[string]bool
}

func (p *IDsProjection) Apply(e *eventlog.Event) error {
	if e.Type == TypeCreated && e.Subject != "" && !strings.Contains(e.Subject, "\n") && !p.HasTask(e.Subject) {
		if p.fresh == nil {
			p.fresh = map[string]bool{}
		}
		p.fresh[e.Subject] = true
	}
	return nil
}

// HasTask reports whether a task with this id was created. (A create whose
// data the tasks projection cannot use still takes its id here: ids are
// never reused.)
func (p *IDsProjection) HasTask(id string) bool {
	return p.fresh[id] || strings.Contains(p.saved, "\n"+id+"\n")
}

func (p *IDsProjection) TaskCount() int { return p.count + len(p.fresh) }

// IDs lists every task id, sorted.
func (p *IDsProjection) IDs() []string {
	ids := make([]string, 0, p.TaskCount())
	if p.saved != "" {
		ids = append(ids, strings.Split(strings.Trim(p.saved, "\n"), "\n")...)
	}
	for id := range p.fresh {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (p *IDsProjection) MarshalState() ([]byte, error) {
	return []byte(strings.Join(p.IDs(), "\n")), nil
}

func (p *IDsProjection) UnmarshalState(b []byte) error {
	*p = IDsProjection{}
	if len(b) > 0 {
		p.saved = "\n" + string(b) + "\n"
		p.count = strings.Count(p.saved, "\n") - 1
	}
	return nil
}

func (p *IDsProjection) Files() ([]projections.File, error) { return nil, nil }
