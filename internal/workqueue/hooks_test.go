package workqueue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// An abandonment or a Blocked carries the request for its hook when one is
// configured, with the event's data; the request stays pending until its
// outcome, marked once started.
func TestHookRequests(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.MaxFailures = 1
	hooks := Hooks{HookAbandoned: {"notify-abandoned"}, HookBlocked: {"notify-blocked"}}
	for _, tc := range []struct {
		name   string
		hooks  Hooks
		decide func(w *world, id string) ([]eventlog.Draft, error)
		want   string // the hook requested, "" for none
		event  string
	}{
		{"abandoned", hooks, func(w *world, id string) ([]eventlog.Draft, error) {
			w.claim(p, id, "a", t0)
			return Fail(w.s, p, id, "a", "boom", t0)
		}, HookAbandoned, TypeAbandoned},
		{"blocked by hand", hooks, func(w *world, id string) ([]eventlog.Draft, error) {
			d, err := Block(w.s, id, "needs a human")
			return []eventlog.Draft{d}, err
		}, HookBlocked, TypeBlocked},
		{"blocked by its label", hooks, func(w *world, id string) ([]eventlog.Draft, error) {
			return UpdateTask(w.s, id, Update{AddLabels: []string{BlockedLabel}})
		}, HookBlocked, TypeBlocked},
		{"abandoned, no hook for it", Hooks{HookBlocked: {"x"}}, func(w *world, id string) ([]eventlog.Draft, error) {
			w.claim(p, id, "a", t0)
			return Fail(w.s, p, id, "a", "boom", t0)
		}, "", ""},
		{"failed, not abandoned", hooks, func(w *world, id string) ([]eventlog.Draft, error) {
			q := p
			q.MaxFailures = 0
			w.claim(q, id, "a", t0)
			return Fail(w.s, q, id, "a", "boom", t0)
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.add("t", 2, t0)
			drafts, err := tc.decide(w, id)
			if err != nil {
				t.Fatal(err)
			}
			reqs, err := HookRequests(drafts, tc.hooks)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(reqs) != 0 {
					t.Fatalf("requests %+v, want none", reqs)
				}
				return
			}
			if len(reqs) != 1 || reqs[0].Type != TypeHookRequested || reqs[0].Subject != id {
				t.Fatalf("requests %+v", reqs)
			}
			d := reqs[0].Data.(HookRequestedData)
			var announced eventlog.Draft
			for _, x := range drafts {
				if x.Type == tc.event {
					announced = x
				}
			}
			want, _ := json.Marshal(announced.Data)
			if d.Hook != tc.want || d.Event != tc.event || string(d.Data) != string(want) {
				t.Fatalf("request %+v, want %s after %s with %s", d, tc.want, tc.event, want)
			}

			at := t0.Add(time.Minute)
			w.apply("a", at, append(drafts, reqs...)...)
			h := w.s.Entry(id)
			if len(h.Hooks) != 1 || h.Hooks[0].Hook != tc.want || h.Hooks[0].Started || h.Hooks[0].Writer != "w" {
				t.Fatalf("pending %+v", h.Hooks)
			}
			if ids := w.s.WithHooks(); len(ids) != 1 || ids[0] != id {
				t.Fatalf("WithHooks %v", ids)
			}
			var in struct {
				Type, Subject, Actor string
				At                   time.Time
				Data                 json.RawMessage
			}
			if err := json.Unmarshal(h.Hooks[0].Stdin(id), &in); err != nil || in.Type != tc.event || in.Subject != id ||
				in.Actor != "a" || !in.At.Equal(at) || string(in.Data) != string(want) {
				t.Fatalf("stdin %s (%v)", h.Hooks[0].Stdin(id), err)
			}
			// A snapshot lists the entries with hooks pending in its index:
			// read back, they are found without decoding every entry.
			snap, err := NewQueueProjection(w.s).MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			back := NewQueueProjection(NewState())
			if err := back.UnmarshalState(snap); err != nil {
				t.Fatal(err)
			}
			if ids := back.State().WithHooks(); len(ids) != 1 || ids[0] != id || len(back.State().hst.m) != 0 {
				t.Fatalf("from the snapshot: WithHooks %v, %d entries decoded", ids, len(back.State().hst.m))
			}
			if got := back.State().Entry(id).Hooks; len(got) != 1 || got[0] != h.Hooks[0] {
				t.Fatalf("from the snapshot: %+v, want %+v", got, h.Hooks)
			}
			req := h.Hooks[0].Request
			w.apply("a", at, eventlog.Draft{Type: TypeHookStarted, Subject: id, Data: HookRequestData{Request: req}})
			if h := w.s.Entry(id); !h.Hooks[0].Started || h.JSON().PendingHooks[0] != tc.want+" (started)" {
				t.Fatalf("after the start: %+v", h.Hooks)
			}
			zero := 0
			w.apply("a", at, eventlog.Draft{Type: TypeHookFinished, Subject: id, Data: HookFinishedData{Request: req, ExitCode: &zero}})
			if h := w.s.Entry(id); h.Hooks != nil || len(w.s.WithHooks()) != 0 {
				t.Fatalf("after the outcome: %+v", h.Hooks)
			}
		})
	}
}
