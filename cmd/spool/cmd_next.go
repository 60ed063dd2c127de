package main

import (
	"fmt"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// NextCmd claims the most urgent eligible task (seed 001's Next).
type NextCmd struct {
	Label        []string `short:"l" sep:"none" placeholder:"LABEL" help:"Only tasks with this label, besides workqueue.label (repeatable)."`
	ExcludeLabel []string `sep:"none" placeholder:"LABEL" help:"Never tasks with this label (repeatable)."`
	Worker       string   `short:"w" help:"Who works on it (default: the actor)."`
}

// nextJSON is the claimed task with its claim.
type nextJSON struct {
	workqueue.TaskJSON
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
}

func (c *NextCmd) Run(e *env) error {
	if err := validateLabelFlags(c.Label, c.ExcludeLabel); err != nil {
		return err
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	gate := q.policy.Gate(c.Label, c.ExcludeLabel)
	var cands []workqueue.Candidate
	if !q.native() {
		// Poll before taking the lock: the claim itself is decided under it.
		if cands, err = q.beads.Ready(e.ctx, gate.Require); err != nil {
			return err
		}
	}
	var claim *workqueue.Claim
	_, s, err := q.write(bothSides, func(s *workqueue.State, actor string) ([]eventlog.Draft, error) {
		worker := c.Worker
		if worker == "" {
			worker = actor
		}
		drafts, cl, err := workqueue.Next(s, cands, q.native(), q.policy, gate, worker, actor, q.now)
		if err != nil {
			return nil, err
		}
		claim = cl
		return drafts, q.mirror(e.ctx, drafts, "")
	})
	if err != nil {
		return err
	}
	if claim == nil {
		if e.JSON {
			return writeJSON(e.stdout, nil)
		}
		if at, id := q.policy.Wakeup(s.History, q.now); !at.IsZero() {
			fmt.Fprintf(e.stdout, "nothing ready; %s may be claimable at %s\n", id, at.Format(time.RFC3339))
			return nil
		}
		fmt.Fprintln(e.stdout, "nothing ready")
		return nil
	}
	out := nextJSON{Attempt: claim.Attempt, Worker: claim.Worker, LeaseUntil: claim.LeaseUntil}
	if t := s.Tasks[claim.Task.ID]; t != nil {
		out.TaskJSON = s.View(t, q.policy, q.now, false)
	} else {
		c := claim.Task
		out.TaskJSON = workqueue.TaskJSON{ID: c.ID, Title: c.Title, Description: c.Description, Status: workqueue.StatusInProgress,
			Priority: c.Priority, IssueType: c.IssueType, Labels: c.Labels, Assignee: claim.Worker, CreatedAt: c.CreatedAt}
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "claimed %s (P%d, attempt %d, lease until %s): %s\n", out.ID, out.Priority, out.Attempt,
		out.LeaseUntil.Format(time.RFC3339), text(out.Title))
	return nil
}
