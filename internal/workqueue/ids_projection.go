package workqueue

import (
	"maps"
	"sort"
	"strings"
	"unsafe"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// IDsName is the projection of every task id: all spool task add needs, in a
// snapshot a few bytes per task, so adding a task reads 100 KB rather than
// the megabytes of the tasks themselves.
const IDsName = "task-ids"

// IDsSpec registers it; saves are amortized like the tasks'.
var IDsSpec = projections.Spec{Name: IDsName, Version: 2, Amortize: 1000, Overlay: overlayEvery, New: func() projections.Projection { return &IDsProjection{} }}

// IDsProjection holds the snapshot's ids, newline-separated and sorted, as
// read, plus ids created since.
type IDsProjection struct {
	saved string // the snapshot's ids joined by "\n": its bytes, not a copy
	count int
	fresh map[string]bool
}

func (p *IDsProjection) Apply(e *eventlog.Event) error {
	if e.Type == TypeCreated && ValidID(e.Subject) && !p.HasTask(e.Subject) {
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
	return p.fresh[id] || sortedHas(p.saved, id)
}

// sortedHas reports whether id is a line of s, sorted lines separated by
// "\n", by binary search: a catch-up asks once per task.created, and a
// scan of 100,000 ids each time made a command with 700 of them to apply
// take half a second.
func sortedHas(s, id string) bool {
	if s == "" {
		return false
	}
	lo, hi := 0, len(s)+1 // both at line starts, as if s ended in "\n": the lines left to search
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := lo + strings.LastIndexByte(s[lo:mid], '\n') + 1
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		switch line := s[start:end]; {
		case line == id:
			return true
		case line < id:
			lo = end + 1
		default:
			hi = start
		}
	}
	return false
}

// Snapshot is a copy of the ids now, for a reader to keep.
func (p *IDsProjection) Snapshot() *IDsProjection {
	return &IDsProjection{saved: p.saved, count: p.count, fresh: maps.Clone(p.fresh)}
}

func (p *IDsProjection) TaskCount() int { return p.count + len(p.fresh) }

// IDs lists every task id, sorted.
func (p *IDsProjection) IDs() []string {
	ids := make([]string, 0, p.TaskCount())
	if p.saved != "" {
		ids = append(ids, strings.Split(p.saved, "\n")...)
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

// UnmarshalState keeps b as it is (the engine hands over a buffer of its
// own): copying 100,000 ids was a tenth of spool task add.
func (p *IDsProjection) UnmarshalState(b []byte) error {
	*p = IDsProjection{}
	if len(b) > 0 {
		p.saved = unsafe.String(&b[0], len(b))
		p.count = strings.Count(p.saved, "\n") + 1
	}
	return nil
}

func (p *IDsProjection) Files() ([]projections.File, error) { return nil, nil }
