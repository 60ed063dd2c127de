package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/kongtree"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// spool's beads front end: the commands beads clients run (agent runners,
// orchestrators, boards), with bd 0.49's flags, JSON, text, error text and
// exit status (1 for any error), over spool's own tracker. It runs as
// "spool bd ARGS", or as ARGS when spool is invoked as bd or br (a symlink).
// Each command is one struct in bd_read.go or bd_write.go.

// BDCmd is spool bd: every argument after "bd" is bd's.
type BDCmd struct {
	Args []string `arg:"" optional:"" help:"bd's command and flags (spool bd help lists them)."`
}

func (c *BDCmd) Run(e *env, kctx *kong.Context) error {
	args := c.Args
	if e.JSON {
		args = append([]string{"--json"}, args...)
	}
	// spool's --actor given on the command line wins over $BD_ACTOR; from
	// $SPOOL_ACTOR it comes after it.
	actor := ""
	for _, p := range kctx.Path {
		if p.Flag != nil && p.Flag.Name == "actor" {
			actor = e.Globals.Actor
		}
	}
	if code := runBD(e.ctx, "bd", args, e.Globals.Dir, actor, e.stdout, e.stderr, e.storeOpts...); code != 0 {
		panic(exitPanic(code)) // bd's status, already reported in bd's words
	}
	return nil
}

// asBeads reports whether spool was invoked as bd or br.
func asBeads(argv0 string) (string, bool) {
	name := filepath.Base(argv0)
	return name, name == "bd" || name == "br"
}

// bdCLI is bd's command tree. bd's global flags for its own storage
// (daemon, auto-sync, sandbox, staleness) mean nothing to spool, whose log
// is always current: they are accepted and ignored. --db names a storage
// spool does not have: refused.
type bdCLI struct {
	JSON     bool   `name:"json" help:"Output in JSON format."`
	Actor    string `help:"Who is acting (default: spool's --actor, $BD_ACTOR, $BEADS_ACTOR, $SPOOL_ACTOR, git user.email, $USER)."`
	Readonly bool   `help:"Refuse every command that changes a task."`
	DB       string `name:"db" hidden:"" help:"Refused: spool keeps its tasks in its log."`

	NoDaemon       bool   `name:"no-daemon" hidden:""`
	NoAutoFlush    bool   `name:"no-auto-flush" hidden:""`
	NoAutoImport   bool   `name:"no-auto-import" hidden:""`
	Sandbox        bool   `hidden:""`
	AllowStale     bool   `name:"allow-stale" hidden:""`
	NoDB           bool   `name:"no-db" hidden:""`
	LockTimeout    string `name:"lock-timeout" hidden:""`
	DoltAutoCommit string `name:"dolt-auto-commit" hidden:""`
	Profile        bool   `hidden:""`
	Verbose        bool   `short:"v" hidden:""`
	Quiet          bool   `short:"q" hidden:""`

	Ready      bdReadyCmd      `cmd:"" help:"Show work with no open blockers."`
	List       bdListCmd       `cmd:"" help:"List issues."`
	Show       bdShowCmd       `cmd:"" help:"Show issues with what they depend on and what depends on them."`
	Create     bdCreateCmd     `cmd:"" aliases:"new" help:"Create an issue."`
	Update     bdUpdateCmd     `cmd:"" help:"Update issues; --status in_progress claims them under a lease."`
	Close      bdCloseCmd      `cmd:"" aliases:"done" help:"Close issues."`
	Reopen     bdReopenCmd     `cmd:"" help:"Reopen closed issues."`
	Comments   bdCommentsCmd   `cmd:"" help:"List an issue's comments, or add one (comments add ID TEXT)."`
	Comment    bdCommentCmd    `cmd:"" hidden:"" help:"Add a comment (comments add)."`
	Label      bdLabelCmd      `cmd:"" help:"Add, remove or list labels."`
	Dep        bdDepCmd        `cmd:"" help:"Dependencies: add, remove, tree, cycles."`
	Epic       bdEpicCmd       `cmd:"" help:"Epics: status, close-eligible."`
	Export     bdExportCmd     `cmd:"" help:"Write every issue as bd's JSONL."`
	Import     bdImportCmd     `cmd:"" help:"Read issues from bd's JSONL."`
	Version    bdVersionCmd    `cmd:"" help:"Print the version."`
	Init       bdInitCmd       `cmd:"" help:"Initialize spool here (git init first if this is no repository), with the issue prefix."`
	Blocked    bdBlockedCmd    `cmd:"" help:"Show blocked issues."`
	Stats      bdStatsCmd      `cmd:"" aliases:"status" help:"Show statistics: issues by status, blocked, ready."`
	Search     bdSearchCmd     `cmd:"" help:"Search issues by text in their id, title or description."`
	Prime      bdPrimeCmd      `cmd:"" help:"An agent's context: what the tracker holds, the workflow, the rules."`
	Onboard    bdOnboardCmd    `cmd:"" help:"What to put in AGENTS.md."`
	Help       bdHelpCmd       `cmd:"" help:"Help about any command."`
	Quickstart bdQuickstartCmd `cmd:"" help:"A quick start guide."`

	// Inspection and maintenance, as beads' MCP server runs them (bd_maint.go).
	Info            bdInfoCmd            `cmd:"" help:"Where the tracker is, its prefix and issue count (--schema: sample ids)."`
	Validate        bdValidateCmd        `cmd:"" help:"Check for orphaned dependencies, duplicates and test issues."`
	RepairDeps      bdRepairDepsCmd      `cmd:"" name:"repair-deps" help:"Find (and with --fix remove) dependencies on missing issues."`
	DetectPollution bdDetectPollutionCmd `cmd:"" name:"detect-pollution" help:"Find issues that look like test data."`
	Migrate         bdMigrateCmd         `cmd:"" help:"--inspect: the migration plan (spool has none to run)."`

	// Refused, saying why and what to use (bd_refused.go).
	Delete       bdRefusedCmd `cmd:"" hidden:""`
	Edit         bdRefusedCmd `cmd:"" hidden:""`
	RenamePrefix bdRefusedCmd `cmd:"" name:"rename-prefix" hidden:""`
	Sync         bdRefusedCmd `cmd:"" hidden:""`
	Daemon       bdRefusedCmd `cmd:"" hidden:""`
	Daemons      bdRefusedCmd `cmd:"" hidden:""`
	Compact      bdRefusedCmd `cmd:"" hidden:""`
	Admin        bdRefusedCmd `cmd:"" hidden:""`
	Restore      bdRefusedCmd `cmd:"" hidden:""`
	Template     bdRefusedCmd `cmd:"" hidden:""`
	Audit        bdRefusedCmd `cmd:"" hidden:""`
}

// bdTree is bdCLI's commands and global flags: each bd command line is
// parsed through a tree of its command alone (internal/kongtree).
var bdTree = kongtree.New[bdCLI]()

// bdEnv is what a bd command's Run receives.
type bdEnv struct {
	*env
	cli *bdCLI
}

// runBD runs one bd command line and returns its exit status. actor is
// spool's --actor, when given on spool's command line.
func runBD(ctx context.Context, name string, args []string, dir, actor string, stdout, stderr io.Writer, opts ...store.Option) int {
	var cli bdCLI
	target, fill := bdTree.Target(&cli, args)
	parser, err := kong.New(target,
		kong.Name(name),
		kong.Description(name+" over spool's tracker: beads' commands, flags and JSON (bd 0.49)."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exitPanic(c)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	jsonOut := wantsJSON(args)
	if len(args) == 0 || len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		args = []string{"help"} // cobra's root help, as bd prints it
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		msg := err.Error()
		var pe *kong.ParseError
		if errors.As(err, &pe) && strings.HasPrefix(msg, "unexpected argument ") && len(args) > 0 {
			msg = fmt.Sprintf("unknown command %q for %q", strings.TrimPrefix(msg, "unexpected argument "), name)
		}
		return reportBD(stdout, stderr, jsonOut, name, fault.Usagef(fault.CodeUsage, "%s", msg))
	}
	fill()
	if cli.DB != "" {
		return reportBD(stdout, stderr, cli.JSON, name, fault.Usagef(fault.CodeUsage,
			"--db %s: spool keeps its tasks in its event log (.git/spool/events), not a database; drop --db", cli.DB))
	}
	// bd's --actor, spool's, $BD_ACTOR, $BEADS_ACTOR, $SPOOL_ACTOR; then git
	// user.email, then (as bd) $USER, then "unknown".
	actor = cmp.Or(strings.TrimSpace(cli.Actor), strings.TrimSpace(actor), strings.TrimSpace(os.Getenv("BD_ACTOR")),
		strings.TrimSpace(os.Getenv("BEADS_ACTOR")), strings.TrimSpace(os.Getenv("SPOOL_ACTOR")))
	g := &Globals{Dir: dir, Actor: actor, JSON: cli.JSON}
	last := func() string { return cmp.Or(strings.TrimSpace(os.Getenv("USER")), "unknown") }
	b := &bdEnv{env: &env{Globals: g, ctx: ctx, stdout: stdout, stderr: stderr, app: parser, lastActor: last, storeOpts: opts}, cli: &cli}
	if err := kctx.Run(b); errors.Is(err, errBDStatus1) {
		return 1 // the command has said what it found
	} else if err != nil {
		return reportBD(stdout, stderr, cli.JSON || jsonOut, name, err) // a refused command takes --json among its arguments
	}
	return 0
}

// errBDStatus1 is a command's exit 1 when its output has said why (bd
// validate finding problems), with nothing more to print.
var errBDStatus1 = errors.New("exit status 1")

// reportBD prints err as bd does: {"error": "…"} on stdout under --json
// (with spool's code), and "Error: …" on stderr, under --json too: beads'
// MCP server reports a failed command by its stderr alone, and bd leaves
// it empty for most errors, so that the agent learnt nothing of why. The
// status is 1.
// A missing issue and a missing dependency read as bd's, which clients
// match on.
func reportBD(stdout, stderr io.Writer, asJSON bool, name string, err error) int {
	f := fault.Classify(err)
	msg, hint := f.Message, ""
	id, _ := f.Fields["id"].(string)
	switch {
	case errors.Is(err, workqueue.ErrNoTask):
		msg = fmt.Sprintf("resolving ID %s: operation failed: failed to resolve ID: no issue found matching %q", id, id)
	case errors.Is(err, workqueue.ErrNoDependency):
		msg = fmt.Sprintf("operation failed: failed to dep remove: dependency from %s to %s does not exist", id, f.Fields["blocker"])
	case errors.Is(err, git.ErrNotGitRepo), errors.Is(err, store.ErrNotInitialized):
		// bd's words, which agents and scripts match, with what to run.
		msg = "no beads database found"
		hint = "run '" + name + " init' to create one here (spool keeps the issues in .git/spool; it imports a .beads/issues.jsonl)"
	}
	if asJSON {
		one := msg
		if hint != "" {
			one += ": " + hint
		}
		writeJSON(stdout, struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{one, f.Code})
	}
	fmt.Fprintf(stderr, "Error: %s\n", text(msg))
	if hint != "" {
		fmt.Fprintf(stderr, "Hint: %s\n", hint)
	}
	if f.Code == fault.CodeUsage.Name && !asJSON {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
	}
	return 1
}

// queue opens the work queue for a bd command; a change is refused under
// --readonly, and with a bd/br source (spool bd is spool's own tracker).
func (b *bdEnv) queue(change bool) (*wqservice.Service, error) {
	if change && b.cli.Readonly {
		return nil, fault.Usagef(fault.CodeUsage, "operation blocked: --readonly mode")
	}
	q, err := b.workqueue()
	if err != nil {
		return nil, err
	}
	if !q.Native() {
		return nil, fault.Usagef(fault.CodeUsage,
			"spool bd works on spool's own tracker, and workqueue.source is %s: run %s itself",
			workqueue.SettingsFrom(q.Store.Config).Source, workqueue.SettingsFrom(q.Store.Config).Source)
	}
	q.PartialIDs = true // ids as bd resolves them, on the state each command decides on
	return q, nil
}

// priority reads bd's priority: 0-4 or P0-P4.
func bdPriority(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToUpper(s), "P"))
	if err != nil || n < 0 || n > workqueue.MaxPriority {
		return 0, fault.New(fault.CodeInvalidPriority, nil, fmt.Sprintf("invalid priority %q (expected 0-4 or P0-P4)", s), "priority", s)
	}
	return n, nil
}

// printIssues prints tasks as bd's JSON array, or one line each.
func (b *bdEnv) printIssues(ts []workqueue.TaskJSON, line func(workqueue.TaskJSON) string) error {
	for i := range ts {
		ts[i] = workqueue.Beads(ts[i])
	}
	if b.JSON {
		return writeJSON(b.stdout, ts)
	}
	for _, t := range ts {
		fmt.Fprintln(b.stdout, line(t))
	}
	return nil
}

// bdMark is bd's status symbol.
func bdMark(status string) string {
	switch status {
	case workqueue.StatusInProgress:
		return "◐"
	case workqueue.StatusBlocked:
		return "●"
	case workqueue.StatusClosed:
		return "✓"
	case workqueue.StatusDeferred:
		return "❄"
	}
	return "○"
}
