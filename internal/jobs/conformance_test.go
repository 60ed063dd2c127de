package jobs_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/projections/projectiontest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: jobs.Spec, NewClone: newClone, Steps: 300})
}

// clone decides what spool's job commands and workers would on one clone.
type clone struct {
	s      *jobs.State
	writer string
}

func newClone(writer string) projectiontest.Clone { return &clone{s: jobs.NewState(), writer: writer} }

func (c *clone) Apply(e *eventlog.Event) { c.s.Apply(e) }

var (
	users   = []string{"ada", "bob", "root"}
	workers = []string{"w1", "w2"}
	tiers   = []jobs.Tier{jobs.Urgent, jobs.Normal, jobs.Normal, jobs.Background}
)

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func (c *clone) policy() jobs.Policy {
	w, _ := jobs.ParseWindow("22:00-08:00")
	return jobs.Policy{Admins: []string{"root"}, Fair: true, HalfLife: time.Hour, Zone: time.UTC, OffPeak: w,
		CancelGrace: time.Minute, Lease: 10 * time.Minute, DefaultSegment: time.Minute, Slots: 2}
}

func (c *clone) anyJob(r *rand.Rand) string {
	if len(c.s.Jobs) == 0 {
		return "job-none"
	}
	return pick(r, c.s.Sorted()).ID
}

func (c *clone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	p, actor := c.policy(), pick(r, users)
	one := func(d eventlog.Draft, err error) (string, []eventlog.Draft, error) {
		if err != nil {
			return actor, nil, err
		}
		return actor, []eventlog.Draft{d}, nil
	}
	switch r.IntN(12) {
	case 0, 1, 2:
		n := jobs.Submit{Tier: pick(r, tiers), Slots: 1 + r.IntN(2), Segments: 1 + r.IntN(3), Argv: []string{"run"},
			OffPeak: r.IntN(5) == 0, Project: pick(r, []string{"", "render"})}
		if r.IntN(4) == 0 {
			n.StartAfter = now.Add(time.Duration(r.IntN(120)) * time.Minute)
		}
		if r.IntN(15) == 0 {
			n.Every = "@hourly"
		}
		d, _, err := jobs.SubmitJob(c.s, p, n, actor, c.writer, now)
		return actor, d, err
	case 3, 4:
		w := pick(r, workers)
		if r.IntN(2) == 0 {
			d, _, err := jobs.ClaimJob(c.s, p, w, 2, now)
			return w, d, err
		}
		// a worker process of its own, which may find another one dead
		holder := &jobs.ProcRecord{PID: 100 + r.IntN(5), PGID: 1, Start: 7, Boot: "b", NS: "pid:[9]"}
		d, _, err := jobs.ClaimJobHeld(c.s, p, w, holder, jobs.Gone{{PID: 100 + r.IntN(5), PGID: 1, Start: 7, Boot: "b", NS: "pid:[9]"}: true}, 2, now)
		return w, d, err
	case 5, 6:
		id := c.anyJob(r)
		j := c.s.Jobs[id]
		if j == nil {
			return actor, nil, nil
		}
		d, _, err := jobs.SegmentDone(c.s, id, j.Worker, jobs.SegmentEnd{Segment: j.NextSegment(), ExitCode: pick(r, []int{0, 0, 0, 1})})
		return j.Worker, d, err
	case 7:
		d, err := jobs.CancelJob(c.s, p, c.anyJob(r), actor, now)
		return actor, d, err
	case 8:
		if r.IntN(2) == 0 {
			d, err := jobs.PauseJob(c.s, p, c.anyJob(r), actor)
			return actor, d, err
		}
		d, err := jobs.ResumeJob(c.s, p, c.anyJob(r), actor)
		return actor, d, err
	case 9:
		d, err := jobs.MoveJob(c.s, p, c.anyJob(r), jobs.Move{Before: c.anyJob(r)}, "root", now)
		return "root", d, err
	case 10:
		return one(jobs.SetQuota(c.s, p, jobs.Quota{Scope: "user", Name: pick(r, users), Daily: time.Duration(1+r.IntN(3)) * time.Hour}, "root"))
	default:
		return actor, jobs.Tick(c.s, p, now, nil), nil
	}
}
