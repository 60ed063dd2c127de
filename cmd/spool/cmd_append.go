package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// AppendCmd appends one event of a custom type: plumbing for scripts and hooks.
type AppendCmd struct {
	Type    string `arg:"" help:"Event type, dotted lowercase such as deploy.finished."`
	Subject string `short:"s" help:"What the event is about."`
	Data    string `short:"d" default:"{}" help:"Event data as a JSON object."`
	Idem    string `help:"Idempotency key: a second append with the same key appends nothing."`
}

func (c *AppendCmd) Run(e *env) error {
	if !eventlog.ValidType(c.Type) {
		return fault.Usagef(CodeInvalidEventType, "event type %q must be dotted lowercase words such as deploy.finished", c.Type)
	}
	for _, prefix := range store.ReservedPrefixes {
		if strings.HasPrefix(c.Type, prefix) {
			return fault.Usagef(CodeReservedEventType, "event type %q belongs to spool (%s*); use its commands", c.Type, prefix)
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.Data), &obj); err != nil || obj == nil {
		return fault.Usagef(CodeInvalidData, "--data must be a JSON object, got %s", c.Data)
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	now, err := e.now()
	if err != nil {
		return err
	}
	actor, err := e.actor(e.ctx, st.Repo)
	if err != nil {
		return err
	}
	draft := eventlog.Draft{Type: c.Type, Subject: c.Subject, Idem: c.Idem, Data: json.RawMessage(c.Data)}
	events, _, err := st.Write(e.ctx, now, actor, nil, func(*projections.View) ([]eventlog.Draft, error) {
		return []eventlog.Draft{draft}, nil
	})
	if err != nil {
		return err
	}
	ev := events[0]
	if e.JSON {
		line, err := ev.Encode()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(line)
		return err
	}
	fmt.Fprintf(e.stdout, "%s %s seq %d lc %d\n", ev.Type, ev.ID, ev.Seq, ev.LC)
	return nil
}
