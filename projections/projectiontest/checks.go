package projectiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Logs carry a few events of unknown types in every check, as a team with
// a newer spool on one machine would write; the unknown-types check many.
const (
	someUnknown = 8
	manyUnknown = 40
)

// checkRoundTrip: a projection restored from its snapshot marshals to the
// same bytes and renders the same files, and goes on folding as the
// original does. The log is cut at random points; at each, one copy is
// checked at once and another is left encoded until events arrive (a
// projection that decodes its snapshot lazily must queue them right).
func checkRoundTrip(tb testing.TB, s Suite, seed uint64) error {
	w := newWorld(tb, s, seed, someUnknown)
	w.build()
	events := readAll(tb, w.clones[0].log)
	r := rand.New(rand.NewPCG(seed, 0x5a17))
	cuts := []int{0, len(events)}
	for range 4 {
		cuts = append(cuts, r.IntN(len(events)+1))
	}
	slices.Sort(cuts)
	orig := s.Spec.New()
	var copies []restored
	prev := 0
	for _, cut := range cuts {
		for _, e := range events[prev:cut] {
			if err := orig.Apply(e); err != nil {
				return fmt.Errorf("apply %s %s: %w", e.Type, e.ID, err)
			}
			for _, c := range copies {
				if err := c.p.Apply(e); err != nil {
					return fmt.Errorf("%v, apply %s %s: %w", c, e.Type, e.ID, err)
				}
			}
		}
		prev = cut
		want, err := render(orig, false)
		if err != nil {
			return err
		}
		for _, c := range copies {
			got, err := render(c.p, c.lazy)
			if err != nil {
				return err
			}
			if d := got.diff(want); d != "" {
				return fmt.Errorf("%v, then %d more events applied to it and to the original: %s", c, cut-c.at, d)
			}
		}
		now, later, err := roundTrip(s.Spec, want, cut)
		if err != nil {
			return err
		}
		copies = append(copies, now, later)
	}
	return nil
}

// restored is a projection unmarshalled from the snapshot of another.
type restored struct {
	p    projections.Projection
	at   int  // events in the snapshot
	lazy bool // left encoded until more events came
}

func (c restored) String() string {
	how := "rendered at once"
	if c.lazy {
		how = "left encoded"
	}
	return fmt.Sprintf("restored from the snapshot after %d events (%s)", c.at, how)
}

// roundTrip restores want's state twice: one copy is rendered at once and
// must give want again, the other is left as it is.
func roundTrip(spec projections.Spec, want rendering, at int) (now, later restored, err error) {
	now, later = restored{p: spec.New(), at: at}, restored{p: spec.New(), at: at, lazy: true}
	// A buffer of its own, as the engine reads a snapshot from its file.
	if err := now.p.UnmarshalState(bytes.Clone(want.state)); err != nil {
		return now, later, fmt.Errorf("the snapshot after %d events does not unmarshal: %w", at, err)
	}
	if err := later.p.UnmarshalState(bytes.Clone(want.state)); err != nil {
		return now, later, err
	}
	got, err := render(now.p, false)
	if err != nil {
		return now, later, err
	}
	if d := got.diff(want); d != "" {
		return now, later, fmt.Errorf("the snapshot after %d events, unmarshalled and marshalled again: %s", at, d)
	}
	return now, later, nil
}

// checkCatchUp: while the clones append and merge, commands catch up on
// one clone or another (a fresh Open, CatchUp and Save under the lock, or
// a view kept open across commands like the merge train's), and after each
// the view, the snapshot on disk and the public files equal a fresh replay,
// which holds the projection's invariants if it has any (projections.Checker).
// A Spec that lets commands put saves off (Amortize) does so here every
// few events, not every thousand, so that short logs take that path too,
// and one that writes overlays (Overlay) writes one at every save it puts
// off, which the next command must load.
func checkCatchUp(tb testing.TB, s Suite, seed uint64) error {
	if s.Spec.Amortize > 0 {
		s.Spec.Amortize = min(s.Spec.Amortize, 8)
	}
	if s.Spec.Overlay > 0 {
		s.Spec.Overlay = 1
	}
	w := newWorld(tb, s, seed, someUnknown)
	r := rand.New(rand.NewPCG(seed, 0xca7c))
	var failure error
	w.afterStep = func() {
		if failure == nil && r.IntN(3) == 0 {
			c := w.clones[r.IntN(len(w.clones))]
			failure = w.catchUp(c, r.IntN(4) == 0)
		}
	}
	w.build()
	if failure != nil {
		return failure
	}
	for _, c := range w.clones {
		if err := w.catchUp(c, false); err != nil {
			return err
		}
		diffs, stale, broken, err := c.engine.Verify(context.Background())
		if err != nil {
			return fmt.Errorf("%s: verify: %w", c.name, err)
		}
		if len(diffs) > 0 || len(broken) > 0 || len(stale) > 0 && s.Spec.Amortize == 0 {
			return fmt.Errorf("%s: verify after catching up: differences %v, broken invariants %v, stale %v", c.name, diffs, broken, stale)
		}
	}
	return nil
}

// catchUp is one command on c; kept reuses the view c keeps open.
func (w *world) catchUp(c *clone, kept bool) error {
	ctx := context.Background()
	unlock, err := c.log.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	v := c.view
	if !kept || v == nil {
		if v, err = c.engine.Open(); err != nil {
			return err
		}
		if kept {
			c.view = v
		}
	}
	if _, err := v.CatchUp(ctx); err != nil {
		return fmt.Errorf("%s: catch up: %w", c.name, err)
	}
	if err := v.Save(); err != nil {
		return fmt.Errorf("%s: save: %w", c.name, err)
	}
	how := "a command"
	if kept {
		how = "a view kept open"
	}
	if err := w.matchesReplay(c, v); err != nil {
		return fmt.Errorf("%s, after %s caught up: %w", c.name, how, err)
	}
	if w.suite.Spec.Overlay > 0 {
		// What a command saved, overlay or snapshot, is what the next
		// command loads: every event, none to apply again. (A view kept
		// open writes no overlay once it saved a snapshot: the next
		// command catches up on the rest.)
		next, err := c.engine.Open()
		if err != nil {
			return err
		}
		if !kept && next.Events() != v.Events() {
			return fmt.Errorf("%s, after %s saved: the next command loads %d events of %d", c.name, how, next.Events(), v.Events())
		}
		if _, err := next.CatchUp(ctx); err != nil {
			return err
		}
		if err := w.matchesReplay(c, next); err != nil {
			return fmt.Errorf("%s, the command after %s: %w", c.name, how, err)
		}
	}
	return nil
}

// matchesReplay compares v and what is on disk with a fresh replay of c's log.
func (w *world) matchesReplay(c *clone, v *projections.View) error {
	name := w.suite.Spec.Name
	fresh, err := c.engine.Replay(context.Background())
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	want, err := render(fresh.Get(name), false)
	if err != nil {
		return err
	}
	got, err := render(v.Get(name), false)
	if err != nil {
		return err
	}
	if v.Events() != fresh.Events() {
		return fmt.Errorf("the view applied %d events, the log has %d", v.Events(), fresh.Events())
	}
	if d := got.diff(want); d != "" {
		return fmt.Errorf("the view differs from a fresh replay of %d events: %s", fresh.Events(), d)
	}
	if c, ok := fresh.Get(name).(projections.Checker); ok {
		if broken := c.Invariants(); len(broken) > 0 {
			return fmt.Errorf("a fresh replay of %d events breaks invariants: %v", fresh.Events(), broken)
		}
	}
	b, err := os.ReadFile(filepath.Join(c.engine.StateDir, name+".snap"))
	if err != nil {
		return fmt.Errorf("no snapshot: %w", err)
	}
	head, body, _ := bytes.Cut(b, []byte{'\n'})
	var cp projections.Checkpoint
	if err := json.Unmarshal(head, &cp); err != nil {
		return fmt.Errorf("snapshot checkpoint: %w", err)
	}
	if lag := fresh.Events() - cp.Events; lag != 0 {
		if a := w.suite.Spec.Amortize; a > 0 && lag > 0 && lag <= fresh.Events()/a {
			return nil // a save the Spec lets commands put off: only the disk lags
		}
		return fmt.Errorf("the snapshot has %d events, the log %d", cp.Events, fresh.Events())
	}
	if !bytes.Equal(body, want.state) {
		return fmt.Errorf("the snapshot on disk differs from a fresh replay: %s", bytesDiff(body, want.state))
	}
	for _, f := range want.files {
		disk, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(f.Path)))
		if err != nil {
			return err
		}
		if !bytes.Equal(disk, f.Data) {
			return fmt.Errorf("%s on disk differs from a fresh replay: %s", f.Path, bytesDiff(disk, f.Data))
		}
	}
	return nil
}

// checkUnknown: events of types no spool knows, some in the domain's own
// namespace and shaped like its events, change nothing: the replay of the
// log equals the fold of the same log without them.
func checkUnknown(tb testing.TB, s Suite, seed uint64) error {
	w := newWorld(tb, s, seed, manyUnknown)
	w.build()
	hub := w.clones[0]
	events := readAll(tb, hub.log)
	known := slices.DeleteFunc(slices.Clone(events), func(e *eventlog.Event) bool { return w.unknown[e.ID] })
	if len(known) == len(events) {
		return fmt.Errorf("the log has no events of unknown types: the check checked nothing")
	}
	v, err := hub.engine.Replay(context.Background())
	if err != nil {
		return fmt.Errorf("replay a log with events of unknown types: %w", err)
	}
	replayed, err := render(v.Get(s.Spec.Name), false)
	if err != nil {
		return err
	}
	all, err := fold(s.Spec, events)
	if err != nil {
		return err
	}
	if d := mustRender(all).diff(replayed); d != "" {
		return fmt.Errorf("folding the log in memory differs from the engine's replay: %s", d)
	}
	if s.FoldsUnknown {
		return nil
	}
	without, err := fold(s.Spec, known)
	if err != nil {
		return err
	}
	if d := replayed.diff(mustRender(without)); d != "" {
		return fmt.Errorf("with %d events of unknown types among %d, the state differs from the state without them: %s",
			len(events)-len(known), len(events), d)
	}
	return nil
}

func mustRender(p projections.Projection) rendering {
	r, err := render(p, false)
	if err != nil {
		r.state = []byte("render failed: " + err.Error())
	}
	return r
}

// checkReplayTwice: replaying the same log twice, or rendering the same
// state twice, gives the same bytes (no map order, no clock, no pointer
// leaks into the output).
func checkReplayTwice(tb testing.TB, s Suite, seed uint64) error {
	w := newWorld(tb, s, seed, someUnknown)
	w.build()
	hub := w.clones[0]
	var first rendering
	for i := range 2 {
		v, err := hub.engine.Replay(context.Background())
		if err != nil {
			return err
		}
		p := v.Get(s.Spec.Name)
		got, err := render(p, false)
		if err != nil {
			return err
		}
		again, err := render(p, true)
		if err != nil {
			return err
		}
		if d := again.diff(got); d != "" {
			return fmt.Errorf("the same state rendered twice: %s", d)
		}
		if st, ok, err := streamed(p); err != nil {
			return err
		} else if d := st.diff(got); ok && d != "" {
			return fmt.Errorf("streamed (StateWriter, FileWriter), not as MarshalState and Files give it: %s", d)
		}
		if i == 0 {
			first = got
		} else if d := got.diff(first); d != "" {
			return fmt.Errorf("the second replay of the same log: %s", d)
		}
	}
	return nil
}

// checkOrderIndependent: every clone, having merged the others' files in
// its own order over its own history, replays to the hub's bytes; so does
// a copy of the hub's writer files written into a new directory in another
// order.
func checkOrderIndependent(tb testing.TB, s Suite, seed uint64) error {
	w := newWorld(tb, s, seed, someUnknown)
	w.build()
	want, err := replayed(w.clones[0].engine, s.Spec.Name)
	if err != nil {
		return err
	}
	for _, c := range w.clones[1:] {
		if err := sameFiles(tb, c.log, w.clones[0].log); err != nil {
			return fmt.Errorf("the world is broken: %s: %w", c.name, err)
		}
		got, err := replayed(c.engine, s.Spec.Name)
		if err != nil {
			return err
		}
		if d := got.diff(want); d != "" {
			return fmt.Errorf("%s, with the same writer files merged in another order, replays otherwise than the hub: %s", c.name, d)
		}
	}
	paths := files(tb, w.clones[0].log)
	r := rand.New(rand.NewPCG(seed, 0x0de7))
	r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	root := tb.TempDir()
	dir := filepath.Join(root, "elsewhere", "events")
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		w.writeFile(filepath.Join(dir, filepath.Base(path)), b)
	}
	log := eventlog.Open(eventlog.Options{Dir: dir, PrivateDir: filepath.Join(root, "private")})
	en := &projections.Engine{Log: log, Root: root, StateDir: filepath.Join(root, "state"), Specs: []projections.Spec{s.Spec}}
	got, err := replayed(en, s.Spec.Name)
	if err != nil {
		return err
	}
	if d := got.diff(want); d != "" {
		return fmt.Errorf("the hub's writer files copied to another directory replay otherwise: %s", d)
	}
	return nil
}

// sameFiles checks that two logs hold the same writer files, byte for byte.
func sameFiles(tb testing.TB, a, b *eventlog.Log) error {
	pa, pb := files(tb, a), files(tb, b)
	if len(pa) != len(pb) {
		return fmt.Errorf("%d writer files, want %d", len(pa), len(pb))
	}
	for i := range pa {
		x, err := os.ReadFile(pa[i])
		if err != nil {
			tb.Fatal(err)
		}
		y, err := os.ReadFile(pb[i])
		if err != nil {
			tb.Fatal(err)
		}
		if filepath.Base(pa[i]) != filepath.Base(pb[i]) || !bytes.Equal(x, y) {
			return fmt.Errorf("%s differs from %s", pa[i], pb[i])
		}
	}
	return nil
}

func replayed(en *projections.Engine, name string) (rendering, error) {
	v, err := en.Replay(context.Background())
	if err != nil {
		return rendering{}, err
	}
	return render(v.Get(name), false)
}
