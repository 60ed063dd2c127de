package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

type JobListCmd struct {
	All bool `help:"Also the jobs that ended (latest first)."`
}

func (c *JobListCmd) Run(e *env) error {
	q, st, err := readJobs(e)
	if err != nil {
		return err
	}
	rows := st.List(q.Policy, q.Env.Now, c.All)
	if e.JSON {
		return writeJSON(e.stdout, nonNil(rows))
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no jobs")
		return nil
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.In(q.Policy.Zone).Format("01-02 15:04")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tID\tPRIORITY\tSTATE\tOWNER\tNAME\tGPUS\tSEGMENTS\tSTARTS (EARLIEST–LIKELY)\tWAITS FOR")
	for _, r := range rows {
		pos := "-"
		if r.Position > 0 {
			pos = fmt.Sprint(r.Position)
		}
		starts := "-"
		switch {
		case r.LikelyStart.IsZero():
		case at(r.EarliestStart) == at(r.LikelyStart): // known to the minute: once
			starts = at(r.LikelyStart)
		default:
			starts = at(r.EarliestStart) + " – " + at(r.LikelyStart)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\n", pos, r.ID, r.Tier, r.Status, text(r.Owner), text(r.Name),
			r.Slots, r.SegmentsDone, r.Segments, starts, orDash(text(r.WaitReason)))
	}
	return tw.Flush()
}

type JobExplainCmd struct{ jobRef }

func (c *JobExplainCmd) Run(e *env) error {
	q, st, err := readJobs(e)
	if err != nil {
		return err
	}
	x, err := st.Explain(q.Policy, c.ID, q.Env.Now)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, x)
	}
	where := string(x.Status)
	if x.Position > 0 {
		where = fmt.Sprintf("%s, %d of %d in the queue", x.Status, x.Position, x.Queued)
	}
	fmt.Fprintf(e.stdout, "%s (%s): %s\n", x.ID, x.Tier, where)
	for _, r := range x.Reasons {
		fmt.Fprintf(e.stdout, "  - %s\n", text(r))
	}
	return nil
}

type JobStatsCmd struct {
	Since string `default:"7d" help:"The window: a duration back from now (7d, 24h) or an RFC 3339 time."`
	Chart bool   `help:"Draw the figures in the terminal."`
}

func (c *JobStatsCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	now := q.Env.Now
	since, err := jobs.ParseSince(c.Since, now)
	if err != nil {
		return err
	}
	st, err := q.Read(e.ctx)
	if err != nil {
		return err
	}
	stats := st.Stats(q.Policy, since, now)
	switch {
	case e.JSON:
		return writeJSON(e.stdout, stats)
	case c.Chart:
		jobs.RenderChart(e.stdout, stats, 80)
		return nil
	}
	t := stats.Totals
	fmt.Fprintf(e.stdout, "%s to %s (%s)\n", since.In(q.Policy.Zone).Format(time.RFC3339), now.In(q.Policy.Zone).Format(time.RFC3339), stats.Zone)
	fmt.Fprintf(e.stdout, "submitted %d  complete %d  failed %d  cancelled %d\n", t.Submitted, t.Completed, t.Failed, t.Cancelled)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRIORITY\tDISPATCHED\tAVERAGE WAIT")
	for _, w := range stats.WaitAll {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", w.Tier, w.Jobs, time.Duration(w.Average).Round(time.Second))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tSLOT TIME")
	for _, u := range stats.Users {
		fmt.Fprintf(tw, "%s\t%s\n", text(u.Name), time.Duration(u.SlotTime).Round(time.Second))
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "(--chart draws waits per day, queue depth, peak hours and usage per project; --json has them all)")
	return nil
}
