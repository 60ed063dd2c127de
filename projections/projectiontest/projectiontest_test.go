package projectiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// tally is a small projection with planted bugs, to show that each check
// catches what it is for: it sums data.n of tally.added events per subject.
type tally struct {
	Sums map[string]int `json:"sums"`
	Last string         `json:"last"` // id of the last tally event
	bug  string
	raw  []byte // the snapshot, until read (the lazy bug)
}

const (
	forgetsLast = "forgets last"      // UnmarshalState loses a field
	lazyDrops   = "drops while lazy"  // decodes its snapshot when read, dropping events applied before
	countsAll   = "counts all types"  // takes any type for its own
	mapOrder    = "renders map order" // the file follows map iteration order
	streamsLess = "streams less"      // its FileWriter leaves out the file's last line
)

func (p *tally) Apply(e *eventlog.Event) error {
	if p.raw != nil {
		return nil
	}
	if e.Type != "tally.added" && !(p.bug == countsAll && strings.HasPrefix(e.Type, "tally.")) {
		return nil
	}
	var d struct {
		N int `json:"n"`
	}
	if json.Unmarshal(e.Data, &d) == nil {
		p.Sums[e.Subject] += d.N
	}
	p.Last = e.ID
	return nil
}

func (p *tally) MarshalState() ([]byte, error) {
	p.decode()
	return json.Marshal(p)
}

func (p *tally) UnmarshalState(b []byte) error {
	if p.bug == lazyDrops {
		p.raw = b
		return nil
	}
	if err := json.Unmarshal(b, p); err != nil {
		return err
	}
	if p.bug == forgetsLast {
		p.Last = ""
	}
	return nil
}

func (p *tally) decode() {
	if p.raw != nil {
		json.Unmarshal(p.raw, p)
		p.raw = nil
	}
}

func (p *tally) Files() ([]projections.File, error) {
	p.decode()
	keys := make([]string, 0, len(p.Sums))
	for k := range p.Sums {
		keys = append(keys, k)
	}
	if p.bug != mapOrder {
		sort.Strings(keys)
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, p.Sums[k])
	}
	fmt.Fprintf(&b, "last %s\n", p.Last)
	return []projections.File{{Path: "out/tally.txt", Data: []byte(b.String()), WorkTree: true}}, nil
}

// streamTally is a tally that also streams its state and file
// (projections.StateWriter, FileWriter).
type streamTally struct{ *tally }

func (p streamTally) WriteState(w io.Writer) error {
	b, err := p.MarshalState()
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

func (p streamTally) WriteFiles(emit func(path string, workTree bool, write func(io.Writer) error) error) error {
	files, err := p.Files()
	if err != nil {
		return err
	}
	for _, f := range files {
		data := f.Data
		if p.bug == streamsLess {
			data = data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]
		}
		if err := emit(f.Path, f.WorkTree, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return err
		}
	}
	return nil
}

func streamTallySuite(bug string) Suite {
	s := tallySuite(bug)
	s.Spec.New = func() projections.Projection { return streamTally{&tally{Sums: map[string]int{}, bug: bug}} }
	return s
}

func tallySuite(bug string) Suite {
	return Suite{
		Spec: projections.Spec{Name: "tally", Version: 1, New: func() projections.Projection {
			return &tally{Sums: map[string]int{}, bug: bug}
		}},
		NewClone: func(string) Clone { return Commands(tallyCommand) },
	}
}

func tallyCommand(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	var drafts []eventlog.Draft
	for range 1 + r.IntN(3) {
		drafts = append(drafts, eventlog.Draft{Type: "tally.added", Subject: fmt.Sprintf("s%d", r.IntN(12)), Data: map[string]int{"n": r.IntN(10)}})
	}
	return "ada@example.com", drafts, nil
}

func TestCorrectProjectionPasses(t *testing.T) {
	Run(t, tallySuite(""))
}

func TestCorrectStreamingProjectionPasses(t *testing.T) {
	Run(t, streamTallySuite(""))
}

// TestChecksCatchPlantedBugs runs each check on a tally with a bug it is
// meant to catch.
func TestChecksCatchPlantedBugs(t *testing.T) {
	cases := []struct {
		bug    string
		checks []string
		suite  func(bug string) Suite
	}{
		{forgetsLast, []string{"snapshot-round-trip", "catch-up-equals-replay"}, tallySuite},
		{lazyDrops, []string{"snapshot-round-trip", "catch-up-equals-replay"}, tallySuite},
		{countsAll, []string{"unknown-types-skipped"}, tallySuite},
		{mapOrder, []string{"replay-twice-identical"}, tallySuite},
		{streamsLess, []string{"replay-twice-identical"}, streamTallySuite},
	}
	for _, c := range cases {
		for _, name := range c.checks {
			t.Run(c.bug+"/"+name, func(t *testing.T) {
				for _, ch := range checks {
					if ch.name != name {
						continue
					}
					// Map order is random: two renderings agree now and
					// then, so that bug gets a few runs to show.
					var err error
					for try := 0; try < 5 && err == nil; try++ {
						err = ch.run(t, c.suite(c.bug), 1)
					}
					if err == nil {
						t.Fatalf("%s did not catch a tally that %s", name, c.bug)
					}
					t.Logf("caught: %v", err)
				}
			})
		}
	}
}
