package bdcli

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// bd help and bd quickstart: bd's help is cobra's, whose headings
// ("Usage:", "Available Commands:", "Flags:") scripts and agents look for.

type bdHelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain."`
}

func (c *bdHelpCmd) Run(b *bdEnv) error {
	name := b.app.Model.Name
	if len(c.Command) > 0 {
		// As "bd CMD --help": kong prints the command's help and exits 0.
		if _, err := b.app.Parse(append(c.Command, "--help")); err != nil {
			return bdUsage("unknown help topic %q; run '%s help'", strings.Join(c.Command, " "), name)
		}
		return nil
	}
	w := b.stdout
	fmt.Fprintf(w, "Issues chained together like beads: a dependency-aware issue tracker.\n")
	fmt.Fprintf(w, "Here %s is spool: bd's commands, flags and JSON over spool's tracker, whose every\nchange is an event in the repository's log (.git/spool).\n\n", name)
	fmt.Fprintf(w, "Usage:\n  %s [flags]\n  %s [command]\n\nAvailable Commands:\n", name, name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range b.app.Model.Children {
		if !n.Hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", n.Name, n.Help)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nFlags:\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range b.app.Model.Flags {
		if f.Hidden {
			continue
		}
		short := "   "
		if f.Short != 0 {
			short = fmt.Sprintf("-%c,", f.Short)
		}
		fmt.Fprintf(tw, "  %s --%s\t%s\n", short, f.Name, f.Help)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nUse \"%s [command] --help\" for more information about a command.\n", name)
	return nil
}

type bdQuickstartCmd struct{}

func (c *bdQuickstartCmd) Run(b *bdEnv) error {
	fmt.Fprint(b.stdout, strings.ReplaceAll(bdQuickstart, "bd ", b.app.Model.Name+" "))
	return nil
}

const bdQuickstart = `
bd - Dependency-Aware Issue Tracker (spool)

Issues chained together like beads; here every change is an event in spool's log.

GETTING STARTED
  bd init                Initialize here (.spool/config.json; the log in .git/spool)
  bd init --prefix api   Issues will be named api-<hash> (e.g., api-a3f2)

CREATING ISSUES
  bd create "Fix login bug"
  bd create "Add auth" -p 0 -t feature
  bd create "Write tests" -d "Unit tests for auth" --assignee alice
  bd create "Step one" --parent <epic-id>

VIEWING ISSUES
  bd list                    Open issues (--all for closed ones too)
  bd list --status open      By status
  bd list --priority 0       By priority (0-4, 0=highest)
  bd show <id>               Details, dependencies and comments

MANAGING DEPENDENCIES
  bd dep add <id> <other>    <id> depends on <other> (<other> blocks it)
  bd dep add <id> <other> --type related    A link that does not block
  bd dep tree <id>           What <id> waits for
  bd blocked                 What waits, and for what

READY WORK
  bd ready                   Open issues nothing blocks, most urgent first

UPDATING AND CLOSING
  bd update <id> --status in_progress    Claim it (a lease in spool's queue)
  bd update <id> --priority 0
  bd comments add <id> "What I found"
  bd close <id> --reason "Fixed in PR #42"

AGENTS
  bd prime                   The workflow and rules for an agent's session
  Use --json on any command for bd's JSON.

Ready to start!
Run bd create "My first issue" to create your first issue.
`
