package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// Batch is what Follow hands on: the events appended since the last batch,
// in the log's order, or a tick of its timer (no events, Tick true). The
// first batch is the log as it was when Follow started (First true).
type Batch struct {
	Events []*eventlog.Event
	First  bool
	Tick   bool
}

// Follow keeps a live view of the log, as spool serve's pages and spool
// mcp's subscriptions need: it reads the log from the start, then again on
// every wake (Wakes), handing fn each batch of new events; every tick
// (0: never) it calls fn with an empty batch, for what time alone changes (a
// backoff or a lease running out). A damaged log ends it with the error
// (corrupt_log, as every command stops); another read error is a warning
// and the next wake reads again. It returns nil when ctx ends.
func Follow(ctx context.Context, log *eventlog.Log, wakes <-chan struct{}, tick time.Duration, warn func(string), fn func(Batch)) error {
	from := map[string]eventlog.Start{}
	evs, err := readNew(log, from)
	fn(Batch{Events: evs, First: true})
	if err != nil {
		return err // the log as it starts is damaged: nothing to follow
	}
	var ticks <-chan time.Time
	if tick > 0 {
		t := time.NewTicker(tick)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
			fn(Batch{Tick: true})
			continue
		case <-wakes:
		}
		evs, err := readNew(log, from)
		if len(evs) > 0 {
			fn(Batch{Events: evs}) // what was read before an error too
		}
		if errors.Is(err, eventlog.ErrCorrupt) {
			return err
		}
		if err != nil {
			warn(fmt.Sprintf("reading the log: %v", err))
		}
	}
}

// readNew reads the events appended since from, and moves from past them.
func readNew(log *eventlog.Log, from map[string]eventlog.Start) ([]*eventlog.Event, error) {
	rd, err := log.Read(from)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var evs []*eventlog.Event
	for {
		ev, pos, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		from[pos.Writer] = pos.Start()
		evs = append(evs, ev)
	}
}
