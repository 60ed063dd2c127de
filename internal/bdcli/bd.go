// Package bdcli is spool's beads front end: the commands beads clients run
// (agent runners, orchestrators, boards), with bd 0.49's flags, JSON,
// text, error text and exit status (1 for any error), translated onto
// spool's work queue service (internal/workqueue/service). It runs as
// "spool bd ARGS", or as ARGS when spool is invoked as bd or br (a
// symlink): cmd/spool parses neither, and hands the command line to Run.
// Each command is one struct in read.go, write.go, views.go, list.go,
// maint.go, init.go, prime.go, help.go or export.go.
package bdcli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/kongtree"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// Options are what Run gets from the spool command it runs in.
type Options struct {
	// Dir is where the command runs: spool's -C DIR, or "" for the
	// working directory.
	Dir string
	// Actor is spool's --actor when it is given on spool's command line
	// (it then wins over $BD_ACTOR); "" otherwise.
	Actor          string
	Stdout, Stderr io.Writer
	// Version is spool's version, which bd version prints after bd's
	// (asked for then alone: it reads the build info).
	Version func() string
	// Store are how every store the command opens is opened (main's).
	Store []store.Option
	// Host is spool's environment for one bd command line, once bd's flags
	// say who acts and whether it prints JSON.
	Host func(ctx context.Context, s Session) Host
}

// Session is what a bd command line says of how spool's environment runs
// it.
type Session struct {
	// Actor is who acts, from bd's --actor, spool's and the environment
	// ($BD_ACTOR, $BEADS_ACTOR, $SPOOL_ACTOR); "" when none says.
	Actor string
	// LastActor names the actor when nothing else does (as bd, $USER,
	// then "unknown"), where spool would refuse with no_actor.
	LastActor func() string
	// JSON is bd's --json: warnings as JSON lines on stderr.
	JSON bool
	// Stdout and Stderr are what the command writes to: Options' own,
	// stdout buffered.
	Stdout, Stderr io.Writer
}

// Host is what the bd commands use of spool's command environment:
// opening the store and the work queue as every spool command does, its
// warnings, and spool's own export and import, which bd's run.
type Host interface {
	// Workqueue opens the work queue's service.
	Workqueue() (*wqservice.Service, error)
	// OpenLenient opens the store, a configuration key spool does not
	// know notwithstanding.
	OpenLenient() (*store.Store, error)
	// Warn reports what a command repaired or skipped without failing.
	Warn(fault.Warning)
	// Export writes every task as bd's JSONL to output, or stdout for "".
	Export(output string) error
	// Import reads bd's JSONL from file (- for stdin) into the tracker.
	Import(file string) error
	// ImportFrom records the issues of a bd JSONL stream that differ from
	// the tracker's, and returns how many it recorded.
	ImportFrom(r io.Reader) (int, error)
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
	Children   bdChildrenCmd   `cmd:"" help:"List an issue's children (list --parent)."`
	Count      bdCountCmd      `cmd:"" help:"Count issues matching filters, or by status, priority, type, assignee or label."`
	Stale      bdStaleCmd      `cmd:"" help:"Show issues not closed and not updated in --days days."`
	Types      bdTypesCmd      `cmd:"" help:"List the issue types."`
	Q          bdQCmd          `cmd:"" name:"q" help:"Quick capture: create an issue and print its id alone."`
	Prime      bdPrimeCmd      `cmd:"" help:"An agent's context: what the tracker holds, the workflow, the rules."`
	Onboard    bdOnboardCmd    `cmd:"" help:"What to put in AGENTS.md."`
	Help       bdHelpCmd       `cmd:"" help:"Help about any command."`
	Quickstart bdQuickstartCmd `cmd:"" help:"A quick start guide."`

	// Inspection and maintenance, as beads' MCP server runs them (maint.go).
	Info            bdInfoCmd            `cmd:"" help:"Where the tracker is, its prefix and issue count (--schema: sample ids)."`
	Validate        bdValidateCmd        `cmd:"" help:"Check for orphaned dependencies, duplicates and test issues."`
	RepairDeps      bdRepairDepsCmd      `cmd:"" name:"repair-deps" help:"Find (and with --fix remove) dependencies on missing issues."`
	DetectPollution bdDetectPollutionCmd `cmd:"" name:"detect-pollution" help:"Find issues that look like test data."`
	Migrate         bdMigrateCmd         `cmd:"" help:"--inspect: the migration plan (spool has none to run)."`

	// Refused, saying why and what to use (refused.go).
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

// New is kong's parser of bd's whole command tree, for what reads its
// model (docs/reference/bd.md is generated from it); Run parses each
// command line itself.
func New(options ...kong.Option) (*kong.Kong, error) { return kong.New(&bdCLI{}, options...) }

// bdTree is bdCLI's commands and global flags: each bd command line is
// parsed through a tree of its command alone (internal/kongtree).
var bdTree = sync.OnceValue(func() *kongtree.Tree { return kongtree.New[bdCLI]() }) // made when bd runs, not at every start

// bdEnv is what a bd command's Run receives.
type bdEnv struct {
	host           Host
	ctx            context.Context
	stdout, stderr io.Writer
	app            *kong.Kong
	JSON           bool // bd's --json
	o              Options
	cli            *bdCLI
}

// exit is kong's exit (help printed) as a panic, which Run recovers.
type exit int

// Run runs one bd command line as name (bd, br, spool bd) and returns its
// exit status, having reported any error as bd does.
func Run(ctx context.Context, name string, args []string, o Options) (code int) {
	defer func() {
		if p := recover(); p != nil {
			c, ok := p.(exit)
			if !ok {
				panic(p)
			}
			code = int(c)
		}
	}()
	// Buffered: bd list of 100,000 issues was 90,000 writes, a line each.
	// No bd command runs a child process or waits between lines.
	out, stderr := cliout.Buffered(o.Stdout, o.Stderr)
	defer out.Flush()
	stdout := io.Writer(out)
	var cli bdCLI
	target, fill := bdTree().Target(&cli, args)
	parser, err := kong.New(target,
		kong.Name(name),
		kong.Description(name+" over spool's tracker: beads' commands, flags and JSON (bd 0.49)."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exit(c)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	jsonOut := cliout.WantsJSON(args)
	if len(args) == 0 || len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		args = []string{"help"} // cobra's root help, as bd prints it
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		msg := err.Error()
		var pe *kong.ParseError
		if errors.As(err, &pe) && strings.HasPrefix(msg, "unexpected argument ") && len(args) > 0 {
			// kong's "unexpected argument X, did you mean "Y"?" in cobra's words, on one line
			cmd, alt, found := strings.Cut(strings.TrimPrefix(msg, "unexpected argument "), ", did you mean ")
			msg = fmt.Sprintf("unknown command %q for %q", cmd, name)
			if found {
				msg += "; did you mean " + alt
			}
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
	actor := cmp.Or(strings.TrimSpace(cli.Actor), strings.TrimSpace(o.Actor), strings.TrimSpace(os.Getenv("BD_ACTOR")),
		strings.TrimSpace(os.Getenv("BEADS_ACTOR")), strings.TrimSpace(os.Getenv("SPOOL_ACTOR")))
	last := func() string { return cmp.Or(strings.TrimSpace(os.Getenv("USER")), "unknown") }
	host := o.Host(ctx, Session{Actor: actor, LastActor: last, JSON: cli.JSON, Stdout: stdout, Stderr: stderr})
	b := &bdEnv{host: host, ctx: ctx, stdout: stdout, stderr: stderr, app: parser, JSON: cli.JSON, o: o, cli: &cli}
	if err := kctx.Run(b); errors.Is(err, errBDStatus1) {
		return 1 // the command has said what it found
	} else if err != nil {
		return reportBD(stdout, stderr, cli.JSON || jsonOut, name, err) // a refused command takes --json among its arguments
	}
	if err := out.Flush(); err != nil { // the output, or its end, was not written: say so
		return reportBD(o.Stdout, stderr, false, name, err)
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
		cliout.WriteJSON(stdout, struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{one, f.Code})
	}
	fmt.Fprintf(stderr, "Error: %s\n", cliout.Text(msg))
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

// dir is where the command runs: spool's -C DIR or the working directory.
func (b *bdEnv) dir() string {
	if b.o.Dir != "" {
		return b.o.Dir
	}
	return "."
}

// workqueue opens the work queue's service (queue, for a command).
func (b *bdEnv) workqueue() (*wqservice.Service, error) { return b.host.Workqueue() }

// openLenient opens the store, a key spool does not know notwithstanding.
func (b *bdEnv) openLenient() (*store.Store, error) { return b.host.OpenLenient() }

// warn is the host's Warn of a warning with no code of its own.
func (b *bdEnv) warn(msg string) { b.host.Warn(fault.Warned(msg)) }

// storeOptions are how the command opens a store: main's options, and the
// log's warnings told with their codes.
func (b *bdEnv) storeOptions() []store.Option {
	return append(slices.Clip(b.o.Store), store.Warnings(b.host.Warn))
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
		return cliout.WriteJSON(b.stdout, ts)
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
