package main

import (
	"fmt"
	"text/tabwriter"
)

// FeedbackCmd queues feedback for the planner, whose proposal sorts it into
// tasks that spool, not the agent, creates.
type FeedbackCmd struct {
	Add  FeedbackAddCmd  `cmd:"" help:"Queue feedback; it waits until a proposal from the planning agent sorts it into tasks."`
	List FeedbackListCmd `cmd:"" help:"List pending feedback (--all: categorized too)."`
}

type FeedbackAddCmd struct {
	Text string `arg:"" help:"The feedback."`
}

func (c *FeedbackAddCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	id, err := s.AddFeedback(e.ctx, c.Text)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"id": id, "text": c.Text})
	}
	fmt.Fprintf(e.stdout, "added feedback %s\n", id)
	return nil
}

type FeedbackListCmd struct {
	All bool `help:"Categorized feedback too."`
}

func (c *FeedbackListCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	fs, err := s.FeedbackList(e.ctx, c.All)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, fs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, f := range fs {
		fmt.Fprint(tw, row(f.ID, orDash(f.Category), orDash(f.PlanID), text(clip(f.Text, 80))))
	}
	return tw.Flush()
}
