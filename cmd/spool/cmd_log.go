package main

import (
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/fault"
)

// LogCmd prints events in replay order.
type LogCmd struct {
	Type    []string      `short:"t" placeholder:"TYPE" help:"Only events of this type; a pattern such as 'task.*' works (repeatable)."`
	Subject string        `short:"s" help:"Only events about this subject."`
	ByActor string        `name:"by" placeholder:"ACTOR" help:"Only events by this actor."`
	Since   string        `help:"Only events at or after a time (RFC 3339) or within a duration (such as 2h)."`
	N       int           `short:"n" help:"Only the last N matching events (0: all)."`
	Follow  bool          `short:"f" help:"Keep printing new events until interrupted."`
	Poll    time.Duration `default:"200ms" hidden:"" help:"How often --follow looks for new events."`
}

// filter checks the flags; now is read only for a --since duration.
func (c *LogCmd) filter(now func() (time.Time, error)) (eventlog.Filter, error) {
	if c.N < 0 {
		return eventlog.Filter{}, fault.Usagef(CodeInvalidFlag, "-n must not be negative, got %d", c.N)
	}
	var at time.Time
	if _, err := time.Parse(time.RFC3339Nano, c.Since); c.Since != "" && err != nil {
		var nerr error
		if at, nerr = now(); nerr != nil {
			return eventlog.Filter{}, nerr
		}
	}
	f, err := eventlog.ParseFilter(c.Type, c.Subject, c.ByActor, c.Since, at)
	if err != nil {
		return f, fault.Usagef(CodeInvalidFlag, "--%s", strings.TrimPrefix(err.Error(), eventlog.ErrFilter.Error()+": "))
	}
	return f, nil
}

func (c *LogCmd) Run(e *env) error {
	longRunning() // reads the whole log: keep memory bounded
	f, err := c.filter(e.now)
	if err != nil {
		return err
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	pr := &eventPrinter{w: e.stdout, json: e.JSON}
	from := map[string]eventlog.Start{}
	var last []*eventlog.Event
	if f.Subject != "" || c.N > 0 {
		// One subject's events (searched for, or looked up in the subject
		// index, which IndexSubjects keeps after the output), or the
		// log's end: a million events took 1.3 s to read whole.
		last, from, err = st.Latest(e.ctx, f.Subject, c.N, f.Match)
	} else {
		err = readEvents(st.Log, from, func(ev *eventlog.Event) error {
			if !f.Match(ev) {
				return nil
			}
			return pr.print(ev)
		})
	}
	if err != nil {
		return err
	}
	for _, ev := range last {
		if err := pr.print(ev); err != nil {
			return err
		}
	}
	if err := pr.flush(); err != nil {
		return err
	}
	if f.Subject != "" {
		// A cache: a failure costs the next log -s a search, nothing else.
		slack := int64(subjectIndexSlack)
		if n, err := strconv.ParseInt(os.Getenv("SPOOL_TEST_SUBJECT_SLACK"), 10, 64); err == nil {
			slack = n // the index on a small log
		}
		if known := st.Engine.KnownStarts(); known != nil {
			st.Log.IndexSubjects(e.ctx, st.SubjectIndex(), known, slack)
		}
	}
	if !c.Follow {
		return nil
	}
	for {
		// On interrupt, print what arrived since the last poll, then stop:
		// everything appended before the signal is shown.
		interrupted := false
		select {
		case <-e.ctx.Done():
			interrupted = true
		case <-time.After(c.Poll):
		}
		var batch []*eventlog.Event
		if err := readEvents(st.Log, from, func(ev *eventlog.Event) error {
			if f.Match(ev) {
				batch = append(batch, ev)
			}
			return nil
		}); err != nil {
			return err
		}
		sort.SliceStable(batch, func(i, j int) bool { return batch[i].Before(batch[j]) })
		for _, ev := range batch {
			if err := pr.print(ev); err != nil {
				return err
			}
		}
		if err := pr.flush(); err != nil || interrupted {
			return err
		}
	}
}

// readEvents streams events after from, advancing from past each one.
func readEvents(l *eventlog.Log, from map[string]eventlog.Start, fn func(*eventlog.Event) error) error {
	r, err := l.Read(from)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		ev, pos, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		from[pos.Writer] = pos.Start()
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// eventPrinter prints JSON Lines, or aligned columns for people.
type eventPrinter struct {
	w    io.Writer
	json bool
	cols *cliout.Columns
	line []byte // the last JSON line, its buffer reused
}

func (p *eventPrinter) print(e *eventlog.Event) error {
	if p.json {
		var err error
		if p.line, err = e.AppendLine(p.line[:0]); err != nil {
			return err
		}
		_, err = p.w.Write(p.line)
		return err
	}
	if p.cols == nil {
		p.cols = cliout.NewColumns(p.w, cliout.ColumnsHeld)
	}
	subject := e.Subject
	if subject == "" {
		subject = "-"
	}
	data := text(clip(strings.TrimSpace(string(e.Data)), 120))
	return p.cols.Row(e.At.Format(time.RFC3339), strconv.FormatUint(e.LC, 10), text(e.Actor), text(e.Type), text(subject), data)
}

// flush writes what print holds: the first rows, for their alignment,
// and what the command's buffered output holds (see bulkOutput).
func (p *eventPrinter) flush() error {
	if p.cols != nil {
		if err := p.cols.Flush(); err != nil {
			return err
		}
	}
	if f, ok := p.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// subjectIndexSlack is how much of the log log -s searches before it
// indexes it: about 15,000 events, searched in a millisecond or two.
const subjectIndexSlack = 4 << 20
