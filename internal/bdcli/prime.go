package bdcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/prime"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// bd prime and bd onboard: the agent's context (internal/prime) with what
// the tracker holds now. As bd's, prime prints nothing and succeeds where
// there is no tracker: session hooks run it in every project.

type bdPrimeCmd struct {
	Full    bool `help:"The whole command reference."`
	MCP     bool `name:"mcp" help:"The rules alone (an agent whose tools are an MCP server's)."`
	Export  bool `help:"The default text, not .beads/PRIME.md."`
	Stealth bool `help:"Accepted: spool's context has no git commands to leave out."`
}

func (c *bdPrimeCmd) Run(b *bdEnv) error {
	st, err := store.Open(b.ctx, b.dir(), func(string) {}, b.o.Store...)
	if err != nil {
		return nil // no spool here: nothing to prime, as bd outside a beads project
	}
	if !c.Export {
		// As bd: a project's own .beads/PRIME.md replaces the default.
		if custom, err := os.ReadFile(filepath.Join(st.Repo.Root, ".beads", "PRIME.md")); err == nil {
			_, err = b.stdout.Write(custom)
			return err
		}
	}
	q, err := b.queue(false)
	if err != nil {
		return err
	}
	s, err := q.Read(b.ctx, wqservice.Tracker)
	if err != nil {
		return err
	}
	n := s.BeadsStats(q.Policy, q.Now)
	ctx := prime.Context{Bin: b.app.Model.Name,
		Counts: prime.Counts{Open: n.TotalIssues - n.ClosedIssues, InProgress: n.InProgressIssues, Blocked: n.BlockedIssues, Ready: n.ReadyIssues, Closed: n.ClosedIssues}}
	if id := os.Getenv("SPOOL_TASK_ID"); id != "" {
		if t := s.Task(id); t != nil {
			ctx.Task = &prime.Issue{ID: t.ID, Title: t.Title, Priority: t.Priority}
			ctx.Attempt, _ = strconv.Atoi(os.Getenv("SPOOL_ATTEMPT"))
		}
	}
	ready := s.Ready(q.Policy, workqueue.ReadyFilter{}, q.Now, 3)
	for _, t := range ready {
		ctx.Ready = append(ctx.Ready, prime.Issue{ID: t.ID, Title: t.Title, Priority: t.Priority})
	}
	mode := prime.Short
	switch {
	case c.MCP:
		mode = prime.MCP
	case c.Full:
		mode = prime.Full
	}
	return prime.Write(b.stdout, ctx, mode)
}

type bdOnboardCmd struct{}

func (c *bdOnboardCmd) Run(b *bdEnv) error {
	if b.JSON {
		return cliout.WriteJSON(b.stdout, map[string]string{"command": b.app.Model.Name + " prime"})
	}
	if err := prime.Onboard(b.stdout, b.app.Model.Name); err != nil {
		return fmt.Errorf("onboard: %w", err)
	}
	return nil
}
