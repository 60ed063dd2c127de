package workqueue

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
)

// Notification hooks: a command spool runs when a task is abandoned or
// Blocked (so a person hears of a task the queue has given up on), as
// every side effect is run: the request is appended with the decision
// (task.hook_requested), the start before the command runs
// (task.hook_started), the outcome after (task.hook_finished). A request
// with no outcome is run by a later command of the clone that made it; one
// that started and has no outcome is not run again (spool stopped while it
// ran: the outcome says so), so a hook runs at most once per request.

// Hooks, by the event they follow; each is the suffix of its config key.
const (
	HookAbandoned = "on_abandoned" // after task.abandoned
	HookBlocked   = "on_blocked"   // after task.blocked
)

// HookOf is the hook that follows events of type typ ("" for none).
func HookOf(typ string) string {
	switch typ {
	case TypeAbandoned:
		return HookAbandoned
	case TypeBlocked:
		return HookBlocked
	}
	return ""
}

// HookKey is the configuration key of hook.
func HookKey(hook string) string { return "workqueue." + hook }

// Hooks are the commands configured, by hook; a hook not set has none.
type Hooks map[string][]string

// HooksFrom reads the hooks' argv from the configuration.
func HooksFrom(cfg *config.Config) Hooks {
	h := Hooks{}
	for _, hook := range []string{HookAbandoned, HookBlocked} {
		if argv := cfg.Strings(HookKey(hook)); len(argv) > 0 {
			h[hook] = argv
		}
	}
	return h
}

// HookRequests are the requests to run the hooks configured for drafts
// (one a task.abandoned or task.blocked): appended with them, they are
// the intent the service carries out afterwards. Each carries the event
// it follows, for the hook's stdin.
func HookRequests(drafts []eventlog.Draft, hooks Hooks) ([]eventlog.Draft, error) {
	var out []eventlog.Draft
	for _, d := range drafts {
		hook := HookOf(d.Type)
		if hook == "" || len(hooks[hook]) == 0 {
			continue
		}
		data, err := json.Marshal(d.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, eventlog.Draft{Type: TypeHookRequested, Subject: d.Subject,
			Data: HookRequestedData{Hook: hook, Event: d.Type, Data: data}})
	}
	return out, nil
}

// PendingHook is a task.hook_requested without its task.hook_finished.
type PendingHook struct {
	Request string // the request's event id
	Writer  string // the clone that made it: the only one that runs it
	Hook    string
	Event   string    // the type of the event it follows
	Data    string    // that event's data, JSON
	At      time.Time // when, and by whom, that event was recorded
	Actor   string
	Started bool // task.hook_started: it may have run
}

// String names the request as people read it: "on_abandoned", "on_blocked (started)".
func (p PendingHook) String() string {
	if p.Started {
		return p.Hook + " (started)"
	}
	return p.Hook
}

// Stdin is what the hook reads: the event it follows, as the log has it
// (type, subject, at, actor, data).
func (p PendingHook) Stdin(subject string) []byte {
	b, _ := json.Marshal(struct {
		Type    string          `json:"type"`
		Subject string          `json:"subject"`
		At      time.Time       `json:"at"`
		Actor   string          `json:"actor"`
		Data    json.RawMessage `json:"data"`
	}{p.Event, subject, p.At, p.Actor, json.RawMessage(p.Data)})
	return append(b, '\n')
}

// applyHook folds the hook events into h's pending requests.
func (s *State) applyHook(e *eventlog.Event) {
	id := e.Subject
	switch e.Type {
	case TypeHookRequested:
		var d HookRequestedData
		if json.Unmarshal(e.Data, &d) != nil || d.Hook == "" || !json.Valid(d.Data) {
			return
		}
		h := s.entry(id)
		h.Hooks = append(h.Hooks, PendingHook{Request: e.ID, Writer: strings.Clone(e.Writer), Hook: d.Hook, Event: d.Event,
			Data: string(d.Data), At: e.At, Actor: strings.Clone(e.Actor)})
	case TypeHookStarted, TypeHookFinished:
		var d HookRequestData
		h := s.Entry(id)
		if h == nil || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		i := slices.IndexFunc(h.Hooks, func(p PendingHook) bool { return p.Request == d.Request })
		switch {
		case i < 0:
		case e.Type == TypeHookStarted:
			h.Hooks[i].Started = true
		default:
			h.Hooks = slices.Delete(h.Hooks, i, i+1)
			if len(h.Hooks) == 0 {
				h.Hooks = nil
			}
		}
	}
}

// WithHooks returns the ids of the entries with hook requests not
// finished, sorted: those decoded or changed since the snapshot, and those
// the snapshot recorded as having some.
func (s *State) WithHooks() []string {
	var ids []string
	for id, h := range s.History {
		if len(h.Hooks) > 0 {
			ids = append(ids, id)
		}
	}
	if s.history != nil {
		for _, i := range s.history.hooks {
			if id := s.history.IDs[i]; s.History[id] == nil {
				ids = append(ids, id) // unchanged since the snapshot
			}
		}
	}
	sort.Strings(ids)
	return ids
}
