package prdqueue_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/projections/projectiontest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: prdqueue.Spec, NewClone: newClone, Steps: 300})
	// Run returns when every check is done: what the clones' folds broke.
	if bad := broken.list(); len(bad) > 0 {
		t.Fatalf("the fold of merged logs broke %d rules; the first: %v", len(bad), bad[:min(len(bad), 5)])
	}
}

// broken collects the fold rules the clones' models saw broken while they
// folded the logs the suite merged (Apply has no testing.T; the suite's
// invariants check the state, these the steps to it).
var broken violations

type violations struct {
	mu   sync.Mutex
	bad  []string
	seen map[string]bool // a clone folds its whole log again after each merge
}

func (v *violations) add(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if v.seen == nil {
		v.seen = map[string]bool{}
	}
	if !v.seen[msg] {
		v.seen[msg] = true
		v.bad = append(v.bad, msg)
	}
}

func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bad
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

// Apply folds e and checks the steps of merged logs: a transition moves an
// item only from the state it names (another clone's stale one changes
// nothing), and a PRD added again (two clones added it apart) keeps its one
// item, in its state.
func (c *clone) Apply(e *eventlog.Event) {
	var d struct {
		FeatureSlug string          `json:"feature_slug"`
		From        prdqueue.Status `json:"from"`
		To          prdqueue.Status `json:"to"`
	}
	_ = json.Unmarshal(e.Data, &d)
	k := prdqueue.ItemKey{Feature: d.FeatureSlug, PRD: strings.TrimPrefix(e.Subject, "prd/")}
	var before *prdqueue.Item
	orig := c.s.Items[k]
	if orig != nil {
		copied := *orig
		before = &copied
	}
	c.s.Apply(e)
	after := c.s.Items[k]
	switch {
	case before == nil || after == nil:
	case e.Type == prdqueue.TypeTransitioned && after.State != before.State && (before.State != d.From || after.State != d.To):
		broken.add("%s %s/%s: %s → %s applied to an item in %s, now %s", e.ID, k.Feature, k.PRD, d.From, d.To, before.State, after.State)
	case e.Type == prdqueue.TypeAdded && (after != orig || after.State != before.State):
		broken.add("%s %s/%s added again: %s, now %s", e.ID, k.Feature, k.PRD, before.State, after.State)
	}
}

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
