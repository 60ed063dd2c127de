package jobs_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/jsonout/jsontest"
)

// A Row writes itself as encoding/json writes it: random rows with every
// field filled or left zero, at any level, either escapeHTML, and declines
// where encoding/json fails (a time it cannot write); and the rows of
// random histories' lists.
func TestRowAppendsAsTheLibrary(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	compared := 0
	check := func(v jobs.Row) { compared += asLibrary(t, r, v) }
	for i := range 3000 {
		var v jobs.Row
		jsontest.Fill(r, &v, i%3 == 0)
		check(v)
	}
	c := newClone("w").(*clone)
	for seed := range uint64(6) {
		s := built(t, seed, 200).State()
		for _, row := range s.List(c.policy(), time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC), true) {
			check(row)
		}
	}
	if compared < 3000 {
		t.Fatalf("only %d rows compared", compared)
	}
}

// A Job writes itself as its MarshalJSON does through encoding/json: random
// jobs, every field filled or left zero, and the jobs of random histories;
// and jobs.json is json.MarshalIndent's list of them, newline after.
func TestJobAppendsAsTheLibrary(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	compared := 0
	check := func(v *jobs.Job) { compared += asLibrary(t, r, v) }
	for i := range 2000 {
		var v jobs.Job
		jsontest.Fill(r, &v, i%3 == 0)
		v.Segments = r.IntN(6) // segment_runs has one per segment: more, or fewer, than started
		check(&v)
	}
	for seed := range uint64(6) {
		p := built(t, seed, 200)
		all := p.State().Sorted()
		for _, j := range all {
			check(j)
		}
		files, err := p.Files()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(all, "", "  ")
		if got := files[0].Data; !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("seed %d: jobs.json differs from json.MarshalIndent's (%d and %d bytes)", seed, len(got), len(want)+1)
		}
	}
	if compared < 2000 {
		t.Fatalf("only %d jobs compared", compared)
	}
}

// asLibrary compares v's AppendJSON with encoding/json at a random level,
// with and without escapeHTML, and returns how many it compared (those
// encoding/json does not refuse).
func asLibrary(t *testing.T, r *rand.Rand, v jsonout.Appender) int {
	n := 0
	for _, escape := range []bool{true, false} {
		level := r.IntN(4)
		if jsontest.Same(t, v, level, escape, func(dst []byte) ([]byte, bool) {
			return v.AppendJSON(dst, jsonout.Format{Level: level, EscapeHTML: escape})
		}) {
			n++
		}
	}
	return n
}
