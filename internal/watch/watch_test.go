package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/store"
)

// fake is a driver whose passes return what results says, one a pass (the
// last one again once they run out), and which counts its calls.
type fake struct {
	name    string
	results []Result
	errs    []error
	recErr  error

	mu                      sync.Mutex
	recovered, passes, stop int
	passAt                  []time.Time
}

func (f *fake) Name() string { return f.name }
func (f *fake) Recover(context.Context, store.Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovered++
	return f.recErr
}
func (f *fake) Pass(context.Context, store.Env) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.passes
	f.passes++
	f.passAt = append(f.passAt, time.Now())
	var r Result
	var err error
	if len(f.results) > 0 {
		r = f.results[min(i, len(f.results)-1)]
	}
	if i < len(f.errs) {
		err = f.errs[i]
	}
	return r, err
}
func (f *fake) Stop(context.Context, store.Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop++
	return nil
}
func (f *fake) count() (int, int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recovered, f.passes, f.stop
}

func noEnv() (store.Env, error) { return store.Env{}, nil }

// run runs the loop in a goroutine; the returned func cancels it and waits
// (at most 10 s) for its result.
func run(t *testing.T, l *Loop) (stop func() error, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- l.Run(ctx) }()
	t.Cleanup(cancel)
	return func() error {
		cancel()
		select {
		case err := <-ch:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the loop did not return within 10 s of its cancel")
			return nil
		}
	}, ch
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOnceRecoversPassesAndReturns(t *testing.T) {
	a, b := &fake{name: "a"}, &fake{name: "b"}
	l := &Loop{Drivers: []Driver{a, b}, Env: noEnv, Once: true}
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fake{a, b} {
		if r, p, s := f.count(); r != 1 || p != 1 || s != 0 {
			t.Errorf("%s: recovered %d, passes %d, stops %d; want 1, 1, 0", f.name, r, p, s)
		}
	}
}

func TestOnceWaitsWhileBusy(t *testing.T) {
	busy := &fake{name: "train", results: []Result{{Busy: true}, {Busy: true}, {Busy: true}, {}}}
	other := &fake{name: "prd"}
	l := &Loop{Drivers: []Driver{busy, other}, Env: noEnv, Once: true, Busy: 10 * time.Millisecond}
	_, done := run(t, l)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--once did not return once its driver stopped being busy")
	}
	if _, p, _ := busy.count(); p != 4 {
		t.Errorf("the busy driver had %d passes, want 4 (three busy, one idle)", p)
	}
	if _, p, _ := other.count(); p != 4 {
		t.Errorf("the other driver had %d passes, want one with each", p)
	}
}

func TestNextIsHonoured(t *testing.T) {
	at := time.Now().Add(150 * time.Millisecond)
	f := &fake{name: "jobs", results: []Result{{Next: at}, {}}}
	l := &Loop{Drivers: []Driver{f}, Env: noEnv}
	stop, _ := run(t, l)
	waitUntil(t, "no second pass at the time the driver asked for", func() bool { _, p, _ := f.count(); return p >= 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.passAt[1].Before(at) {
		t.Errorf("the second pass ran at %s, before the %s asked for", f.passAt[1].Format(time.StampMicro), at.Format(time.StampMicro))
	}
	if f.passes != 2 {
		t.Errorf("%d passes, want 2: nothing else asked for one", f.passes)
	}
}

func TestWakesAreDebounced(t *testing.T) {
	f := &fake{name: "log"}
	wakes := make(chan struct{}, 1)
	l := &Loop{Drivers: []Driver{f}, Env: noEnv, Wakes: wakes, Debounce: 50 * time.Millisecond}
	stop, _ := run(t, l)
	waitUntil(t, "no first pass", func() bool { _, p, _ := f.count(); return p == 1 })
	for range 5 { // a burst: one pass after it
		select {
		case wakes <- struct{}{}:
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitUntil(t, "no pass after the wakes", func() bool { _, p, _ := f.count(); return p >= 2 })
	time.Sleep(100 * time.Millisecond)
	if _, p, _ := f.count(); p != 2 {
		t.Errorf("%d passes after a burst of wakes, want 2", p)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAFailingDriverDoesNotStopTheLoop(t *testing.T) {
	bad := &fake{name: "bad", errs: []error{errors.New("bd failed"), errors.New("bd failed"), nil}}
	good := &fake{name: "good"}
	wakes := make(chan struct{}, 1)
	var mu sync.Mutex
	var reported []string
	l := &Loop{Drivers: []Driver{bad, good}, Env: noEnv, Wakes: wakes, Debounce: time.Millisecond,
		Errorf: func(d string, err error) {
			mu.Lock()
			reported = append(reported, fmt.Sprintf("%s: %v", d, err))
			mu.Unlock()
		}}
	stop, _ := run(t, l)
	for i := 2; i <= 3; i++ {
		waitUntil(t, fmt.Sprintf("pass %d of the good driver", i-1), func() bool { _, p, _ := good.count(); return p == i-1 })
		wakes <- struct{}{}
	}
	waitUntil(t, "no third pass", func() bool { _, p, _ := good.count(); return p == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || reported[0] != "bad: bd failed" {
		t.Errorf("reported %q, want the error once (the same error again is not repeated)", reported)
	}
}

func TestStopOnCancel(t *testing.T) {
	a, b := &fake{name: "a"}, &fake{name: "b"}
	stop, _ := run(t, &Loop{Drivers: []Driver{a, b}, Env: noEnv})
	waitUntil(t, "no first pass", func() bool { _, p, _ := b.count(); return p == 1 })
	if err := stop(); err != nil {
		t.Fatalf("a cancelled loop returned %v, want nil", err)
	}
	for _, f := range []*fake{a, b} {
		if _, _, s := f.count(); s != 1 {
			t.Errorf("%s stopped %d times, want 1", f.name, s)
		}
	}
}

func TestRecoveryErrors(t *testing.T) {
	corrupt := fmt.Errorf("w1.jsonl:3: %w", eventlog.ErrCorrupt)
	f := &fake{name: "tasks", recErr: corrupt}
	if err := (&Loop{Drivers: []Driver{f}, Env: noEnv, Once: true}).Run(context.Background()); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Errorf("recovery on a corrupt log returned %v, want it", err)
	}
	if _, p, _ := f.count(); p != 0 {
		t.Errorf("%d passes after an unusable repository, want none", p)
	}

	busy := fmt.Errorf("busy: %w", eventlog.ErrLockTimeout)
	g := &fake{name: "merge", recErr: busy}
	var got []string
	l := &Loop{Drivers: []Driver{g}, Env: noEnv, Once: true, Errorf: func(d string, err error) { got = append(got, d) }}
	if err := l.Run(context.Background()); err != nil {
		t.Errorf("a busy log at recovery stopped the loop: %v", err)
	}
	if _, p, _ := g.count(); p != 1 || len(got) != 1 {
		t.Errorf("passes %d, reported %q: want the error reported and the pass run", p, got)
	}
}
