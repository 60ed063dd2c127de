package prdqueue_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/projections/projectiontest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: prdqueue.Spec, NewClone: newClone, Steps: 300})
}

// clone decides what spool's prd commands would on one clone, against the
// queue it has folded; the PRD files' contents are drawn at random.
type clone struct {
	s      *prdqueue.State
	writer string
}

func newClone(writer string) projectiontest.Clone {
	return &clone{s: prdqueue.NewState(), writer: writer}
}

func (c *clone) Apply(e *eventlog.Event) { c.s.Apply(e) }

var (
	features = []string{"f1", "f2"}
	prds     = []string{"a", "b", "c", "d"}
	gates    = []string{"approved", "approved", "approved", "approved", "pending", "Approved", ""}
	hashes   = []string{"h1", "h1", "h1", "h2", "h3"}
)

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func (c *clone) facts(r *rand.Rand) prdqueue.Facts {
	f := prdqueue.Facts{PRDGate: pick(r, gates), BeadsGate: pick(r, gates), Hash: pick(r, hashes)}
	if r.IntN(6) == 0 {
		f.OpenQuestions = []string{"Which one?"}
	}
	return f
}

func (c *clone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	actor := "ada@example.com"
	feature, prd := pick(r, features), pick(r, prds)
	if len(c.s.Items) > 0 && r.IntN(3) > 0 { // mostly about items that exist
		var keys []prdqueue.ItemKey
		for _, slug := range c.s.FeatureSlugs() {
			for _, p := range c.s.Features[slug].Items {
				keys = append(keys, prdqueue.ItemKey{Feature: slug, PRD: p})
			}
		}
		k := pick(r, keys)
		feature, prd = k.Feature, k.PRD
	}
	if len(c.s.Features) == 0 {
		d, err := prdqueue.StartFeature(c.s, feature, "", 2)
		return actor, d, err
	}
	switch r.IntN(10) {
	case 0:
		d, err := prdqueue.StartFeature(c.s, feature, "", 2)
		return actor, d, err
	case 1:
		d, err := prdqueue.AddItem(c.s, feature, prd, "")
		return actor, d, err
	case 2, 3:
		it, err := c.s.FindItem(prd, feature)
		if err != nil {
			return actor, nil, err
		}
		if r.IntN(2) == 0 {
			d, err := prdqueue.Discover(it)
			return actor, []eventlog.Draft{d}, err
		}
		d, err := prdqueue.Submit(c.s, it, c.facts(r), now)
		return actor, d, err
	case 4, 5:
		if c.s.PRDs[prd] == nil {
			return actor, nil, fmt.Errorf("no PRD %s", prd)
		}
		return actor, prdqueue.Reconcile(c.s, prd, c.facts(r), r.IntN(3) == 0, now), nil
	case 6, 7:
		cands, _, err := prdqueue.Runnable(c.s, feature)
		if err != nil || len(cands) == 0 {
			return actor, nil, fmt.Errorf("nothing runnable: %v", err)
		}
		var d []eventlog.Draft
		for i, cand := range cands {
			switch {
			case r.IntN(4) == 0:
				d = append(d, cand.Started()) // left in flight, as a crash leaves it
			case r.IntN(3) == 0:
				d = append(d, cand.Started(), cand.Failed(1, "boom", false), cand.Failed(2, "boom", true))
			default:
				epic := cand.Epic
				if epic == "" {
					epic = fmt.Sprintf("%s-epic-%s-%d-%d", c.writer, cand.Item.PRD, now.Unix(), i)
				}
				d = append(d, cand.Enqueued(epic, 1))
			}
		}
		return actor, d, nil
	case 8:
		it, err := c.s.FindItem(prd, feature)
		if err != nil {
			return actor, nil, err
		}
		if r.IntN(2) == 0 {
			d, err := prdqueue.Retry(c.s, it, now)
			return actor, d, err
		}
		return actor, prdqueue.Check(it, r.IntN(2) == 0, r.IntN(2) == 0), nil
	default:
		it, err := c.s.FindItem(prd, feature)
		if err != nil || it.InFlight {
			return actor, nil, fmt.Errorf("cannot remove: %v", err)
		}
		return actor, []eventlog.Draft{prdqueue.Remove(it)}, nil
	}
}
