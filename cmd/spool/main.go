// Command spool keeps a team's work queues as an event log in its git repository.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/bdcli"
	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/kongtree"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/table"
)

// CLI is the command tree; each command lives in cmd_<name>.go. spool
// --help lists the commands in groups, in the order of their fields here
// (kong orders groups by first appearance): daily work first, plumbing last.
type CLI struct {
	Globals

	Init      InitCmd      `cmd:"" group:"Daily work:" help:"Create .spool/ in this repository (idempotent)."`
	Demo      DemoCmd      `cmd:"" group:"Daily work:" help:"Run spool in a throwaway repository and show what it wrote."`
	Status    StatusCmd    `cmd:"" group:"Daily work:" help:"Show the log and the queues at a glance."`
	Task      TaskCmd      `cmd:"" group:"Daily work:" help:"The task tracker: add, show, list, update, close, reopen, dep, comment."`
	Ready     ReadyCmd     `cmd:"" group:"Daily work:" help:"List what next could claim now, most urgent first."`
	Next      NextCmd      `cmd:"" group:"Daily work:" help:"Claim the most urgent eligible task under a lease."`
	Heartbeat HeartbeatCmd `cmd:"" group:"Daily work:" help:"Extend the lease of a task you claimed."`
	Done      DoneCmd      `cmd:"" group:"Daily work:" help:"Record a successful attempt and close the task."`
	Fail      FailCmd      `cmd:"" group:"Daily work:" help:"Record a failed attempt (backoff, abandonment or Blocked)."`
	Retry     RetryCmd     `cmd:"" group:"Daily work:" help:"Put an abandoned, blocked or failed task back, attempts reset."`
	Block     BlockCmd     `cmd:"" group:"Daily work:" help:"Mark a task Blocked by hand."`
	Unblock   UnblockCmd   `cmd:"" group:"Daily work:" help:"Clear Blocked."`
	History   HistoryCmd   `cmd:"" group:"Daily work:" help:"The queue's history: attempts, last error, next eligible time."`
	Stats     StatsCmd     `cmd:"" group:"Daily work:" help:"Count the queue: completed, failed, in backoff, abandoned, blocked, ready."`

	Merge MergeCmd `cmd:"" group:"Merge queue:" help:"The merge queue: submit branches, run the merge train."`

	Job JobCmd `cmd:"" group:"Jobs:" help:"The job scheduler: priority tiers, slots, segments, quotas, off-peak, recurring jobs, workers."`

	PRD PRDCmd `cmd:"" name:"prd" group:"PRDs:" help:"The PRD queue: feature runs, approval gates, promotion to epics, reconciliation."`

	Watch        WatchCmd        `cmd:"" group:"Orchestrator:" help:"Keep the queues going: recovery, PRD promotion, scheduled jobs, merge train, job workers, the orchestrator."`
	Orchestrator OrchestratorCmd `cmd:"" group:"Orchestrator:" help:"The orchestrator's status: it runs an agent on the most urgent ready task, inside spool watch."`
	Plan         PlanCmd         `cmd:"" group:"Orchestrator:" help:"Plans and proposals: agents propose tasks and PRD updates, spool checks and applies them."`
	Feedback     FeedbackCmd     `cmd:"" group:"Orchestrator:" help:"Queue feedback for the planning agent to sort into proposals."`
	MCP          MCPCmd          `cmd:"" name:"mcp" group:"Orchestrator:" help:"Every queue as tools for coding agents over the Model Context Protocol (stdio, or --http)."`

	Sync   SyncCmd   `cmd:"" group:"Sharing:" help:"Share the log through the git remote: fetch the other writers' events, push this clone's (branch sync.branch; work tree, index and HEAD untouched)."`
	Serve  ServeCmd  `cmd:"" group:"Sharing:" help:"The board: every queue as a live web page and JSON under /api/ (127.0.0.1:7070)."`
	Sign   SignCmd   `cmd:"" group:"Sharing:" help:"Signed events: record where signing starts."`
	Export ExportCmd `cmd:"" group:"Sharing:" help:"Write every task as beads' JSONL (bd import reads it)."`
	Import ImportCmd `cmd:"" group:"Sharing:" help:"Read tasks from beads' JSONL (bd export); importing twice changes nothing."`
	BD     BDCmd     `cmd:"" name:"bd" passthrough:"" group:"Sharing:" help:"Run a beads (bd) command over spool's tracker: spool bd ready --json."`

	Config     ConfigCmd     `cmd:"" group:"Maintenance:" help:"Read and change .spool/config.json."`
	Doctor     DoctorCmd     `cmd:"" group:"Maintenance:" help:"Check git, repository, lock, log, hooks and config."`
	Hooks      HooksCmd      `cmd:"" group:"Maintenance:" help:"Install, remove or inspect spool's git hooks."`
	Log        LogCmd        `cmd:"" group:"Maintenance:" help:"Print events, oldest first."`
	Verify     VerifyCmd     `cmd:"" group:"Maintenance:" help:"Check the log and that the queues' saved state equals a fresh replay."`
	Replay     ReplayCmd     `cmd:"" group:"Maintenance:" help:"Rebuild the queues' saved state from the log."`
	Version    VersionCmd    `cmd:"" group:"Maintenance:" help:"Print the version."`
	Completion CompletionCmd `cmd:"" group:"Maintenance:" help:"Print a shell completion script."`

	Append AppendCmd `cmd:"" group:"Plumbing:" help:"Append an event of your own type (for scripts)."`

	Hook        HookCmd        `cmd:"" hidden:"" help:"Run by git hooks."`
	MergeDriver MergeDriverCmd `cmd:"" name:"merge-driver" hidden:"" help:"Git merge driver for writer files."`
	Supervise   SuperviseCmd   `cmd:"" name:"__supervise" hidden:"" help:"Run an agent for spool watch and record how it ended."`
	Complete    CompleteCmd    `cmd:"" name:"__complete" hidden:"" help:"List values for the completion scripts."`
}

// Globals are accepted by every command; help lists them after the
// command's own flags.
type Globals struct {
	Dir   string `short:"C" name:"directory" placeholder:"DIR" group:"Global flags:" help:"Run as if spool was started in DIR."`
	Actor string `env:"SPOOL_ACTOR" group:"Global flags:" help:"Who is acting (default: $$${env}, then git user.email)."`
	JSON  bool   `name:"json" group:"Global flags:" help:"Machine-readable output; errors as one JSON object on stderr."`
	// Offline is --offline of the commands that claim (OfflineFlag).
	Offline bool `kong:"-"`
}

// env is what every command's Run receives.
type env struct {
	*Globals
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	app    *kong.Kong
	// lastActor, when set, names the actor when nothing else does (bd's
	// $USER, then "unknown") rather than no_actor.
	lastActor func() string
	// storeOpts are how every store the command opens is opened (main's).
	storeOpts []store.Option
}

func main() {
	// Most commands live for milliseconds: collecting garbage costs them a
	// third of their time and frees nothing that matters. Collect only when
	// the heap nears a limit (unless GOGC or GOMEMLIMIT say otherwise); long-running
	// commands turn the collector back on (see longRunning).
	off, limit := collector(os.Getenv)
	var opts []store.Option
	if off {
		debug.SetGCPercent(-1)
		// A large save streams hundreds of megabytes of short-lived values:
		// collect them while it runs (longRunning's setting stays).
		opts = append(opts, store.OnLargeSave(func() func() {
			prev := debug.SetGCPercent(100)
			return func() { debug.SetGCPercent(prev) }
		}))
		// A fresh clone's first fold of a large log: as replay's.
		opts = append(opts, store.OnLargeFold(func() func() {
			prevGC := debug.SetGCPercent(100)
			prevLimit := debug.SetMemoryLimit(heapBudget)
			stop := holdHeap()
			return func() {
				stop()
				debug.SetMemoryLimit(prevLimit)
				debug.SetGCPercent(prevGC)
			}
		}))
	}
	if limit {
		debug.SetMemoryLimit(512 << 20)
	}
	crashBySignal(os.Getenv)
	if name, ok := asBeads(os.Args[0]); ok {
		os.Exit(runAsBeads(name, os.Args[1:], os.Stdout, os.Stderr, opts...))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, opts...))
}

// collector says whether a command starts with the collector off and
// whether with spool's 512 MiB limit: not when GOGC says otherwise, and the
// limit not when GOMEMLIMIT sets one.
func collector(getenv func(string) string) (off, limit bool) {
	if getenv("GOGC") != "" {
		return false, false
	}
	return true, getenv("GOMEMLIMIT") == ""
}

// crashBySignal makes a runtime crash (out of memory, a fatal error of
// Go's runtime) end spool by SIGABRT rather than Go's exit 2, which means
// usage here: as GOTRACEBACK=crash does, unless GOTRACEBACK says
// otherwise. Go cannot be made to exit with another code from inside, and
// a signal is how a crash is told apart from an answer.
func crashBySignal(getenv func(string) string) {
	if getenv("GOTRACEBACK") == "" {
		debug.SetTraceback("crash")
	}
}

// longRunning restores the usual garbage collector for commands that keep
// running (the merge train, watch loops) or stream the whole log (replay,
// verify), so their memory stays bounded by what is live.
func longRunning() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}

// heapBudget is what replay and verify keep their heap within while the
// state fits (foldsWholeLog): a replay of 100,000 tasks and a million
// events runs in under 150 MiB.
const heapBudget = 128 << 20

// foldsWholeLog is longRunning for replay and verify, with the heap held
// to heapBudget, or to half again what is live when the state alone is
// larger: a fixed limit below the live heap keeps the collector running
// (the runtime caps it at half the CPU), and the command twice as slow.
// Unless GOGC or GOMEMLIMIT say otherwise.
func foldsWholeLog() {
	longRunning()
	if _, limit := collector(os.Getenv); !limit {
		return
	}
	debug.SetMemoryLimit(heapBudget)
	holdHeap()
}

// holdHeap sets the memory limit after each collection to heapLimit of
// the heap then live, until stop is called.
func holdHeap() (stop func()) {
	var (
		mu      sync.Mutex // a limit set after stop returned would outlive it
		stopped bool
	)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	afterEachGC(func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			metrics.Read(live)
			debug.SetMemoryLimit(heapLimit(int64(live[0].Value.Uint64())))
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

// heapLimit is foldsWholeLog's limit, given the heap live after a collection.
func heapLimit(live int64) int64 { return max(heapBudget, live+live/2) }

// afterEachGC calls f after each collection, from then on: an object
// nothing references is collected by each, and its cleanup calls f and
// makes the next.
func afterEachGC(f func()) {
	type token struct{ _ *int } // with a pointer: not batched with other tiny objects
	var arm func()
	arm = func() {
		runtime.AddCleanup(&token{}, func(struct{}) { f(); arm() }, struct{}{})
	}
	arm()
}

type exitPanic int

// testHeap keeps SPOOL_TEST_PANIC=oom's allocation.
//
//lint:ignore U1000 written, never read: it keeps the allocation from being optimized away
var testHeap []byte

// opts are how every store the command opens is opened (main's choices).
func run(args []string, stdout, stderr io.Writer, opts ...store.Option) int {
	if len(args) == 0 {
		return printStartUsage(stdout) // not kong's "expected one of …"
	}
	return guarded(args, stderr, func(ctx context.Context) int {
		var cli CLI
		var fill func()
		// parse parses args through the tree of the command they name
		// (spoolTree); a command line it refuses is parsed again through
		// the whole tree, whose messages and suggestions name every command.
		parse := func(opts ...kong.Option) (*kong.Kong, *kong.Context, error) {
			try := func(target any) (*kong.Kong, *kong.Context, error) {
				parser, err := kong.New(target, append([]kong.Option{
					kong.Name("spool"),
					kong.Description("spool keeps a team's work queues as an event log in its git repository."),
					kong.Writers(stdout, stderr),
					kong.Exit(func(c int) { panic(exitPanic(c)) }),
					kong.UsageOnError(),
					kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
				}, opts...)...)
				if err != nil {
					return nil, nil, err
				}
				kctx, err := parser.Parse(args)
				return parser, kctx, err
			}
			cli = CLI{}
			var target any
			target, fill = spoolTree.Target(&cli, args)
			parser, kctx, err := try(target)
			if err != nil && target != any(&cli) {
				cli, fill = CLI{}, func() {}
				parser, kctx, err = try(&cli)
			}
			return parser, kctx, err
		}
		parser, kctx, err := parse()
		if err != nil && strings.Contains(err.Error(), "(short flag)") {
			// -n -1: a negative number is the flag's value, which spool
			// then checks, not a flag. Only then: a value-less flag at the
			// end must stay an error.
			parser, kctx, err = parse(kong.WithHyphenPrefixedParameters(true))
		}
		if parser == nil {
			fmt.Fprintln(stderr, "spool:", err)
			return 1
		}
		if err != nil {
			return report(stderr, cliout.WantsJSON(args), fault.Usagef(fault.CodeUsage, "%s", parseMessage(err)))
		}
		fill()
		if cli.Dir != "" {
			if st, err := os.Stat(cli.Dir); err != nil || !st.IsDir() {
				return report(stderr, cli.JSON, fault.New(CodeInvalidDirectory, err,
					fmt.Sprintf("-C %s: not a directory", cli.Dir), "dir", cli.Dir))
			}
		}
		e := &env{Globals: &cli.Globals, ctx: ctx, stdout: stdout, stderr: stderr, app: parser, storeOpts: opts}
		if where := os.Getenv("SPOOL_TEST_PANIC"); where != "" {
			testPanic(where)
		}
		if n, err := strconv.ParseInt(os.Getenv("SPOOL_TEST_PART_SIZE"), 10, 64); err == nil && n > 0 {
			git.PartSize = n // writer files in parts without megabytes of events
		}
		var out *bufio.Writer
		if bulk(kctx) {
			out, e.stderr = cliout.Buffered(stdout, stderr)
			e.stdout = out
			defer out.Flush() // a panic's report follows what was printed
		}
		err = kctx.Run(e)
		if out != nil {
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
		}
		if err != nil {
			return report(stderr, cli.JSON, err)
		}
		return 0
	})
}

// spoolTree is CLI's commands and global flags: a command line is parsed
// through a tree of its command alone, but for completion's script, which
// lists every command.
var spoolTree = kongtree.New[CLI]("completion")

// parseMessage is kong's message for a command line it cannot parse; an
// unknown flag kong has no suggestion for says where the flags are listed.
func parseMessage(err error) string {
	msg := err.Error()
	var perr *kong.ParseError
	if !strings.HasPrefix(msg, "unknown flag ") || strings.Contains(msg, "did you mean") || !errors.As(err, &perr) || perr.Context == nil {
		return msg
	}
	cmd := []string{"spool"}
	for _, p := range perr.Context.Path {
		if p.Command != nil {
			cmd = append(cmd, p.Command.Name)
		}
	}
	return msg + "; " + strings.Join(cmd, " ") + " --help lists its flags"
}

// runAsBeads is spool invoked as bd or br: args are bd's.
func runAsBeads(name string, args []string, stdout, stderr io.Writer, opts ...store.Option) int {
	return guarded(args, stderr, func(ctx context.Context) int {
		return bdcli.Run(ctx, name, args, bdOptions("", "", stdout, stderr, opts))
	})
}

// guarded runs a command line with SIGINT and SIGTERM cancelling its
// context, kong's exits as exit codes, and a bug, in this goroutine or any
// other, as exit 1 (unexpected), not Go's 2, which means usage here; under
// --json as the JSON error object.
func guarded(args []string, stderr io.Writer, fn func(context.Context) int) (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	jsonErrors := cliout.WantsJSON(args)
	defer fault.SetPanicHandler(fault.SetPanicHandler(func(p any, stack []byte) {
		if err, ok := table.MappedFault(p); ok { // on another goroutine (fault.Go)
			os.Exit(report(stderr, jsonErrors, err))
		}
		reportPanic(stderr, jsonErrors, p, stack)
	}))
	// A snapshot read through a mapping (the scheduler's, a table's
	// sections) that something cut short in place faults where it is
	// read: reported as the damaged snapshot it is, not as a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if c, ok := p.(exitPanic); ok {
				code = int(c)
				return
			}
			if err, ok := table.MappedFault(p); ok {
				code = report(stderr, jsonErrors, err)
				return
			}
			if err, ok := p.(*fault.Error); ok { // a typed error from where no error can be returned
				code = report(stderr, jsonErrors, err)
				return
			}
			code = reportPanic(stderr, jsonErrors, p, debug.Stack())
		}
	}()
	return fn(ctx)
}

// report prints err and returns the exit code for it.
func report(w io.Writer, asJSON bool, err error) int {
	f := fault.Classify(err)
	if asJSON {
		b, _ := jsonCompact(map[string]any{"error": f.Object()})
		fmt.Fprintln(w, string(b))
	} else {
		fmt.Fprintf(w, "spool: %s\n", text(f.Message))
		if hint, ok := f.Fields["repair"].(string); ok {
			fmt.Fprintf(w, "spool: %s\n", hint)
		}
	}
	return int(f.Kind)
}

// reportPanic prints a panic as the unexpected error it is, with the stack
// (a field under --json), and returns exit code 1.
func reportPanic(w io.Writer, asJSON bool, p any, stack []byte) int {
	msg := fmt.Sprintf("unexpected internal error (please report it): %v", p)
	if asJSON {
		return report(w, true, fault.New(fault.CodeUnexpected, nil, msg, "stack", string(stack)))
	}
	fmt.Fprintf(w, "spool: %s\n%s", msg, stack)
	return int(fault.Unexpected)
}

// testPanic lets tests see how a panic is reported (SPOOL_TEST_PANIC):
// "main" panics in the command's goroutine, "goroutine" in one started with
// fault.Go, as a bug in either would; "oom" runs out of memory.
func testPanic(where string) {
	if where == "oom" { // a runtime crash: more memory than a heap can have
		testHeap = make([]byte, math.MaxInt>>15)
	}
	if where == "goroutine" {
		fault.Go(func() { panic("SPOOL_TEST_PANIC=goroutine") })
		time.Sleep(time.Minute) // the panic ends the process long before
	}
	panic("SPOOL_TEST_PANIC=" + where)
}

// writeJSON and jsonCompact are cliout's WriteJSON and JSONCompact.
func writeJSON(w io.Writer, v any) error { return cliout.WriteJSON(w, v) }
func jsonCompact(v any) ([]byte, error)  { return cliout.JSONCompact(v) }
