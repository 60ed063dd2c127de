package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// scaleMain builds realistic work-queue logs (every command's events
// appended and fsynced one command at a time, as the CLI writes them) of
// 1,000, 10,000 and 100,000 tasks, about 10 events each, and prints a
// table of whole-process medians and peak RSS per command and size:
//
//	spoolbench scale -spool BIN [-tasks 1000,10000,100000] [-runs 21] [-slow-runs 3] [-dir DIR]
//
// With -dir the datasets are kept in DIR/<tasks> and reused by later runs;
// the commands are then timed on a copy, so that the kept dataset stays as
// generated.
func scaleMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench scale", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	sizesFlag := fs.String("tasks", "1000,10000,100000", "dataset sizes in tasks, comma-separated (about 10 events a task)")
	runs := fs.Int("runs", 21, "timed runs per command (after one warm-up)")
	slowRuns := fs.Int("slow-runs", 3, "timed runs of replay and verify")
	keep := fs.String("dir", "", "keep the datasets in DIR/<tasks> and reuse them (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" || *runs < 1 || *slowRuns < 1 {
		return fmt.Errorf("%w: -spool BIN is required; -runs and -slow-runs must be at least 1", errUsage)
	}
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			return fmt.Errorf("%w: -tasks %q: sizes must be numbers of at least 10", errUsage, *sizesFlag)
		}
		sizes = append(sizes, n)
	}
	spool, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	root := *keep
	if root == "" {
		if root, err = os.MkdirTemp("", "spool-scale-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	} else {
		if root, err = filepath.Abs(root); err != nil {
			return err
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
	}
	var cols []scaleColumn
	for _, n := range sizes {
		meta, repo, err := scaleDataset(spool, root, n)
		if err != nil {
			return err
		}
		printLoad()
		col, err := scaleTimes(spool, repo, meta, *runs, *slowRuns, *keep != "")
		if err != nil {
			return err
		}
		cols = append(cols, col)
	}
	printScaleTable(cols, *runs, *slowRuns)
	return nil
}

// scaleActor is who the timed commands run as.
const scaleActor = "bench@spool.invalid"

// scaleMetaFile, in a dataset's directory, says it is complete and what it holds.
const scaleMetaFile = "spoolbench-scale.json"

// scaleMeta describes a generated dataset.
type scaleMeta struct {
	Tasks    int       `json:"tasks"`
	Events   int       `json:"events"`
	Commands int       `json:"commands"` // appends, one per simulated command
	Now      time.Time `json:"now"`      // the clock just after the last command: SPOOL_NOW for the timed commands
	// The state at Now.
	Closed    int    `json:"closed"`
	Claimed   int    `json:"claimed"`   // in progress, lease running
	Failed    int    `json:"failed"`    // last attempt failed, claimable again (Backoff of them not yet)
	Backoff   int    `json:"backoff"`   // failed and waiting out the backoff
	Abandoned int    `json:"abandoned"` // max_failures reached
	Waiting   int    `json:"waiting"`   // open with an open blocker
	Built     string `json:"built"`     // how long generating and the first replay took
}

func (m scaleMeta) String() string {
	return fmt.Sprintf("%d tasks, %d events from %d commands; %d closed, %d claimed, %d failed (%d in backoff), %d abandoned, %d waiting on a blocker; SPOOL_NOW=%s",
		m.Tasks, m.Events, m.Commands, m.Closed, m.Claimed, m.Failed, m.Backoff, m.Abandoned, m.Waiting, m.Now.Format(time.RFC3339))
}

// scaleDataset returns the dataset of n tasks in root/<n>, generated (then
// replayed once, so that the snapshots exist) unless a finished one is there.
func scaleDataset(bin, root string, n int) (scaleMeta, string, error) {
	dir := filepath.Join(root, strconv.Itoa(n))
	var m scaleMeta
	if b, err := os.ReadFile(filepath.Join(dir, scaleMetaFile)); err == nil {
		if err := json.Unmarshal(b, &m); err != nil || m.Tasks != n {
			return m, "", fmt.Errorf("%s: not a dataset of %d tasks (%v)", filepath.Join(dir, scaleMetaFile), n, err)
		}
		fmt.Printf("dataset: reusing %s: %s\n", dir, m)
		return m, dir, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return m, "", err
	}
	if _, err := os.Stat(dir); err == nil {
		return m, "", fmt.Errorf("%s exists but holds no finished dataset (no %s): remove it", dir, scaleMetaFile)
	}
	start := time.Now()
	_, _, env, _, err := benchRepo(bin, dir, "", scaleActor)
	if err != nil {
		return m, "", err
	}
	// In a child process, so that this one stays small: a command it
	// starts counts its RSS at the start as its own (see scaleTimes).
	self, err := os.Executable()
	if err != nil {
		return m, "", err
	}
	gen := exec.Command(self, "scale-gen", "-dir", dir, "-tasks", strconv.Itoa(n))
	gen.Stderr = os.Stderr
	out, err := gen.Output()
	if err != nil {
		return m, "", fmt.Errorf("%s: %v", strings.Join(gen.Args, " "), err)
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return m, "", fmt.Errorf("%s: %v", strings.Join(gen.Args, " "), err)
	}
	fmt.Fprintf(os.Stderr, "scale %d: spool replay\n", n)
	if _, err := run(dir, env, bin, "replay"); err != nil {
		return m, "", err
	}
	m.Built = time.Since(start).Round(time.Second).String()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, "", err
	}
	if err := os.WriteFile(filepath.Join(dir, scaleMetaFile), append(b, '\n'), 0o644); err != nil {
		return m, "", err
	}
	fmt.Printf("dataset: built %s in %s: %s\n", dir, m.Built, m)
	return m, dir, nil
}

// scaleGenMain is scaleDataset's child: it generates the log of n tasks in
// the spool repository dir and prints the dataset's description (JSON).
//
//	spoolbench scale-gen -dir DIR -tasks N [-check]
func scaleGenMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench scale-gen", flag.ExitOnError)
	dir := fs.String("dir", "", "a spool repository with an empty log")
	n := fs.Int("tasks", 0, "tasks to create")
	check := fs.Bool("check", false, "decide every next on the whole state too and fail if the decisions differ (slow)")
	fs.Parse(args)
	if *dir == "" || *n < 1 {
		return fmt.Errorf("%w: -dir and -tasks are required", errUsage)
	}
	m, err := generateScale(*dir, *n, *check)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(m)
}

// The workload's rates: per task added, on average scaleUpdates task
// updates and scaleComments comments on random tasks, and claims enough that
// a tenth of the tasks end done when scaleFailRate of the attempts fail.
const (
	scaleUpdates  = 3.7
	scaleComments = 5.0
	scaleFailRate = 0.25
	scaleDone     = 0.1
)

var (
	scaleHumans = []string{"alice@spool.invalid", "bob@spool.invalid", "carol@spool.invalid"}
	scaleLabels = []string{"backend", "frontend", "infra", "docs", "api", "ui", "perf", "security"}
	scaleTypes  = []string{"task", "task", "task", "bug", "bug", "feature", "chore"}
	scaleVerbs  = []string{"Fix", "Add", "Refactor", "Document", "Speed up", "Remove", "Test", "Rework"}
	scaleThings = []string{"the lease check", "retry backoff", "the task page", "label filters", "the sync path",
		"error messages", "the import of old exports", "snapshot loading", "the settings form", "the login flow",
		"pagination", "the CSV export", "rate limiting", "the search index", "webhook delivery", "audit logging"}
	scaleAreas     = []string{"the API", "the CLI", "the board", "the worker", "the importer", "the scheduler"}
	scaleSentences = []string{
		"Users report that this fails intermittently when several clients run at once.",
		"The current behaviour is surprising and undocumented; see the linked discussion.",
		"We should keep the old format readable for at least one release.",
		"Reproduce with a fresh clone and the default configuration.",
		"This blocks the next release candidate, so it needs an owner this week.",
		"Measure before and after; the last attempt made it slower on large inputs.",
		"Check the error path too: a partial write must leave nothing behind.",
		"A test that covers the edge case with an empty list would have caught this.",
	}
	scaleNotes = []string{
		"Looked into this: the failure comes from the retry loop, not the parser.",
		"I can reproduce it locally with the steps above.",
		"Pushed a draft fix; it still needs a test for the empty case.",
		"This is related to the lease change from last week.",
		"Not urgent, but it keeps coming up in reviews.",
		"LGTM once CI is green.",
		"Moved the flaky part behind a flag for now.",
		"Could we split this into two smaller tasks? The second half touches the importer.",
		"Done on my side; waiting for the review.",
		"The benchmark numbers are in the PR description.",
	}
)

// scaleGen simulates spool's users and agents on a repository: every
// command is decided by workqueue's own decide functions on the state so
// far and appended (and fsynced) on its own, with the clock one second
// later per command.
type scaleGen struct {
	sess     *eventlog.Session
	st       *workqueue.State
	pol      workqueue.Policy
	prefix   string
	at       time.Time
	rng      *rand.Rand
	ids      []string // tasks in creation order
	order    scaleOrder
	agents   []scaleAgent
	check    bool // decide every next on the whole state too, and compare
	events   int
	commands int
}

// commit appends one command's drafts as actor and folds them; a decision
// with no drafts appends nothing, as in spool.
func (g *scaleGen) commit(actor string, drafts []eventlog.Draft, err error) error {
	if err != nil || len(drafts) == 0 {
		return err
	}
	evs, err := g.sess.Append(g.at, actor, drafts, eventlog.AppendOptions{})
	if err != nil {
		return err
	}
	for i := range evs {
		before := -1
		if t := g.st.Task(evs[i].Subject); t != nil {
			before = t.Priority
		}
		g.st.Apply(&evs[i])
		g.order.track(g.st.Task(evs[i].Subject), before)
	}
	g.events += len(evs)
	g.commands++
	g.at = g.at.Add(time.Second)
	return nil
}

// round is x rounded down or up at random, x on average.
func (g *scaleGen) round(x float64) int {
	n := int(math.Floor(x))
	if g.rng.Float64() < x-float64(n) {
		n++
	}
	return n
}

func (g *scaleGen) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *scaleGen) text(list []string, most int) string {
	parts := make([]string, 1+g.rng.IntN(most))
	for i := range parts {
		parts[i] = g.pick(list)
	}
	return strings.Join(parts, " ")
}

func (g *scaleGen) title() string {
	return g.pick(scaleVerbs) + " " + g.pick(scaleThings) + " in " + g.pick(scaleAreas)
}

// add is spool task add: priority 0–4, half the tasks labelled, every
// third waiting for an earlier task.
func (g *scaleGen) add(i int, actor string) error {
	n := workqueue.NewTask{Title: g.title(), Description: g.text(scaleSentences, 3), Priority: g.rng.IntN(5), Type: g.pick(scaleTypes)}
	if i%4 == 0 {
		n.Acceptance = g.pick(scaleSentences)
	}
	if i%2 == 0 {
		n.Labels = []string{g.pick(scaleLabels)}
		if g.rng.IntN(3) == 0 {
			n.Labels = append(n.Labels, g.pick(scaleLabels))
		}
	}
	if i%3 == 2 {
		n.Deps = []string{g.pick(g.ids)}
	}
	d, id, err := workqueue.AddTask(g.st, n, g.prefix, g.sess.Writer(), g.at)
	if err != nil {
		return err
	}
	g.ids = append(g.ids, id)
	return g.commit(actor, []eventlog.Draft{d}, nil)
}

// update is spool task update on a random task: priority, a label, the
// title, the description or the assignee.
func (g *scaleGen) update(actor string) error {
	id := g.pick(g.ids)
	t := g.st.Task(id)
	var u workqueue.Update
	switch r := g.rng.IntN(10); {
	case r < 4:
		p := (t.Priority + 1 + g.rng.IntN(4)) % 5
		u.Priority = &p
	case r < 6:
		u.AddLabels = []string{g.pick(scaleLabels)}
	case r < 8:
		title := g.title()
		u.Title = &title
	case r < 9:
		d := g.text(scaleSentences, 3)
		u.Description = &d
	default:
		a := g.pick(scaleHumans)
		u.Assignee = &a
	}
	drafts, err := workqueue.UpdateTask(g.st, id, u)
	return g.commit(actor, drafts, err)
}

// comment is spool task comment on a random task.
func (g *scaleGen) comment(actor string) error {
	d, err := workqueue.AddComment(g.st, g.pick(g.ids), g.text(scaleNotes, 2))
	return g.commit(actor, []eventlog.Draft{d}, err)
}

// scaleAgent is a worker running next, then done or fail a little later.
type scaleAgent struct {
	name string
	task string // claimed, "" when idle
	due  int    // the step at which it finishes
	fail bool
}

// next is spool next for a: the most urgent eligible task, leases that
// ran out recorded first. workqueue.Next looks at every task, which would
// make the generator quadratic, so it decides on a part of the state: the
// first k tasks in next's order that nothing rules out (with their
// blockers, queue entries and the live claims), k growing until a task is
// found or none is left. Its decision is the one on the whole state (-check
// compares the two).
func (g *scaleGen) next(a *scaleAgent, step int) error {
	gate := g.pol.Gate(nil, nil)
	var drafts []eventlog.Draft
	var claim *workqueue.Claim
	for k := 64; k < 4*len(g.ids)+256; k *= 4 { // part(k) with k past the number of tasks leaves none out
		part, more := g.order.part(g, k)
		var err error
		if drafts, claim, err = workqueue.Next(part, nil, true, g.pol, gate, a.name, a.name, g.at); err != nil {
			return err
		}
		if claim != nil || !more {
			break
		}
	}
	if g.check {
		whole, _, err := workqueue.Next(g.st, nil, true, g.pol, gate, a.name, a.name, g.at)
		if err != nil {
			return err
		}
		if x, y := fmt.Sprintf("%+v", drafts), fmt.Sprintf("%+v", whole); x != y {
			return fmt.Errorf("next at %s: decided %s on part of the state, %s on the whole", g.at, x, y)
		}
	}
	if err := g.commit(a.name, drafts, nil); err != nil {
		return err
	}
	if claim != nil {
		a.task, a.due, a.fail = claim.Task.ID, step+1+g.rng.IntN(5), g.rng.Float64() < scaleFailRate
	}
	return nil
}

// scaleOrder is the tasks not closed in next's order under the exponential
// policy: by priority, then creation (then id; creation times differ here).
type scaleOrder [workqueue.MaxPriority + 1][]*workqueue.Task

// track files t after an event on it; before is its priority before (-1: new).
func (o *scaleOrder) track(t *workqueue.Task, before int) {
	if t == nil {
		return
	}
	if before >= 0 && (before != t.Priority || t.Status == workqueue.StatusClosed) {
		l := o[before]
		i, found := slices.BinarySearchFunc(l, t, scaleCmp)
		if found {
			o[before] = slices.Delete(l, i, i+1)
		}
	}
	if t.Status == workqueue.StatusClosed || before == t.Priority {
		return
	}
	l := o[t.Priority]
	i, _ := slices.BinarySearchFunc(l, t, scaleCmp)
	o[t.Priority] = slices.Insert(l, i, t)
}

func scaleCmp(a, b *workqueue.Task) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// part is a state holding the first k tasks in next's order that are open
// (claims expired included), have no open blocker and no blocked label,
// with what next reads about them: their blockers and queue entries, and
// the agents' claims, whose leases next expires. more says whether tasks
// were left out.
func (o *scaleOrder) part(g *scaleGen, k int) (*workqueue.State, bool) {
	var tasks []*workqueue.Task
	var entries []*workqueue.Entry
	keep := func(id string) {
		if t := g.st.Task(id); t != nil {
			tasks = append(tasks, t)
		}
		if h := g.st.Entry(id); h != nil {
			entries = append(entries, h)
		}
	}
	for _, a := range g.agents {
		if a.task != "" {
			keep(a.task)
		}
	}
	n := 0
	for _, l := range o {
	tasks:
		for _, t := range l {
			if g.st.EffectiveStatus(t, g.at) != workqueue.StatusOpen || t.HasLabel(workqueue.BlockedLabel) {
				continue
			}
			for _, d := range t.Blockers {
				if b := g.st.Task(d.ID); b != nil && b.Status != workqueue.StatusClosed {
					continue tasks
				}
			}
			if n == k {
				return workqueue.StateOf(tasks, entries), true
			}
			n++
			keep(t.ID)
			for _, d := range t.Blockers {
				if b := g.st.Task(d.ID); b != nil {
					tasks = append(tasks, b)
				}
			}
		}
	}
	return workqueue.StateOf(tasks, entries), false
}

// finish is spool done or spool fail for a's claim; after a failure a
// human sometimes lowers the task's priority, and retries an abandoned one.
func (g *scaleGen) finish(a *scaleAgent) error {
	id := a.task
	a.task = ""
	if !a.fail {
		drafts, err := workqueue.Done(g.st, g.pol, id, a.name, "done", g.at)
		return g.commit(a.name, drafts, err)
	}
	drafts, err := workqueue.Fail(g.st, g.pol, id, a.name, "tests failed: exit status 1", g.at)
	if err := g.commit(a.name, drafts, err); err != nil {
		return err
	}
	human := g.pick(scaleHumans)
	if slices.ContainsFunc(drafts, func(d eventlog.Draft) bool { return d.Type == workqueue.TypeAbandoned }) && g.rng.IntN(2) == 0 {
		d, err := workqueue.Retry(g.st, g.pol, id, g.at)
		return g.commit(human, []eventlog.Draft{d}, err)
	}
	if t := g.st.Task(id); t.Priority != workqueue.MaxPriority && g.rng.IntN(10) < 3 {
		p := workqueue.MaxPriority
		drafts, err := workqueue.UpdateTask(g.st, id, workqueue.Update{Priority: &p})
		return g.commit(human, drafts, err)
	}
	return nil
}

// generateScale writes the dataset of n tasks into the spool repository
// dir, one append per simulated command.
func generateScale(dir string, n int, check bool) (scaleMeta, error) {
	ctx := context.Background()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return scaleMeta{}, err
	}
	sess, err := st.Log.Begin(ctx)
	if err != nil {
		return scaleMeta{}, err
	}
	defer sess.Close()
	g := &scaleGen{sess: sess, st: workqueue.NewState(), pol: workqueue.PolicyFrom(st.Config), prefix: workqueue.PrefixFrom(st.Config),
		at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(16, uint64(n))), ids: make([]string, 0, n), check: check}
	if g.pol.Kind != workqueue.Exponential || g.pol.Label != "" || len(g.pol.ExcludeLabels) > 0 {
		return scaleMeta{}, errors.New("the generator's next assumes the default policy: exponential, no label gating")
	}
	g.agents = make([]scaleAgent, max(2, n/2500))
	agents := g.agents
	for k := range agents {
		agents[k].name = fmt.Sprintf("agent%d@spool.invalid", k+1)
	}
	const claims = scaleDone / (1 - scaleFailRate) // per task added
	credit, turn := 0.0, 0
	start, report := time.Now(), time.Now()
	for i := range n {
		human := scaleHumans[i%len(scaleHumans)]
		if err := g.add(i, human); err != nil {
			return scaleMeta{}, err
		}
		updates, comments := g.round(scaleUpdates), g.round(scaleComments)
		for range updates + comments {
			var err error
			if g.rng.IntN(updates+comments) < updates {
				err = g.update(g.pick(scaleHumans))
			} else {
				err = g.comment(g.pick(scaleHumans))
			}
			if err != nil {
				return scaleMeta{}, err
			}
		}
		for k := range agents {
			if a := &agents[k]; a.task != "" && a.due <= i {
				if err := g.finish(a); err != nil {
					return scaleMeta{}, err
				}
			}
		}
		credit = min(credit+claims, float64(len(agents)))
		for k := 0; credit >= 1 && k < len(agents); k++ {
			a := &agents[(turn+k)%len(agents)]
			if a.task != "" {
				continue
			}
			credit--
			if err := g.next(a, i); err != nil {
				return scaleMeta{}, err
			}
		}
		turn++
		if time.Since(report) >= 5*time.Second || i == n-1 {
			report = time.Now()
			fmt.Fprintf(os.Stderr, "scale %d: %d tasks, %d events, %d appends in %s\n",
				n, i+1, g.events, g.commands, time.Since(start).Round(time.Second))
		}
	}
	// The agents' last claims stay in progress; an idle agent claims once more.
	for k := range agents {
		if agents[k].task == "" {
			if err := g.next(&agents[k], n); err != nil {
				return scaleMeta{}, err
			}
		}
	}
	return g.meta(n), nil
}

// meta counts what the generated state holds at the clock after the last command.
func (g *scaleGen) meta(n int) scaleMeta {
	m := scaleMeta{Tasks: n, Events: g.events, Commands: g.commands, Now: g.at}
	for t := range g.st.Tasks() {
		switch {
		case t.Status == workqueue.StatusClosed:
			m.Closed++
		case t.Status == workqueue.StatusInProgress && t.LeaseUntil.After(g.at):
			m.Claimed++
		default:
			for _, d := range t.Blockers {
				if b := g.st.Task(d.ID); b != nil && b.Status != workqueue.StatusClosed {
					m.Waiting++
					break
				}
			}
		}
	}
	for h := range g.st.Entries() {
		switch e := g.pol.Effective(*h, g.at); e.Status {
		case workqueue.HistFailed:
			m.Failed++
			if g.pol.NextEligible(e).After(g.at) {
				m.Backoff++
			}
		case workqueue.HistAbandoned:
			m.Abandoned++
		}
	}
	return m
}

// scaleColumn is one dataset's results: a cell per row.
type scaleColumn struct {
	meta    scaleMeta
	cells   map[string]string
	medians map[string]time.Duration
}

// The table's rows, in order: a key and what the row says.
var scaleRows = [][2]string{
	{"version", "`version` (the process floor)"},
	{"ready", "`ready --json` (first 10)"},
	{"ready-all", "`ready --json -n 0` (all)"},
	{"ready-all-enc", "… encoding its output alone (in process: encoding/json; spool's appenders)"},
	{"next", "`next --json`"},
	{"add", "`task add`"},
	{"update", "`task update ID -p N`"},
	{"show", "`task show ID`"},
	{"done", "`done ID` (after an untimed `next`)"},
	{"fail", "`fail ID -e …` (after an untimed `next`)"},
	{"list", "`task list --json`"},
	{"list-enc", "… encoding its output alone (in process: encoding/json; spool's appenders)"},
	{"status", "`status`"},
	{"replay", "`replay`"},
	{"verify", "`verify`"},
}

// scaleTimes times the commands on the dataset in repo (on a copy when
// copy is set) with the clock at the dataset's end.
//
// The peak RSS wait4 reports for a child includes the RSS of the process
// that started it (os/exec's vfork shares its memory until exec), so this
// process stays small: the generator ran in a child, the timed commands'
// output is discarded as it comes, and the large outputs are decoded and
// re-encoded by another child (scale-encode).
func scaleTimes(bin, repo string, meta scaleMeta, runs, slowRuns int, copy bool) (scaleColumn, error) {
	col := scaleColumn{meta: meta, cells: map[string]string{}, medians: map[string]time.Duration{}}
	dir := repo
	if copy {
		dir = repo + ".run"
		if err := os.RemoveAll(dir); err != nil {
			return col, err
		}
		fmt.Fprintf(os.Stderr, "scale %d: copying the dataset to %s\n", meta.Tasks, dir)
		if _, err := run("", nil, "cp", "-a", repo, dir); err != nil {
			return col, err
		}
		defer os.RemoveAll(dir)
	}
	env := append(os.Environ(), "SPOOL_ACTOR="+scaleActor, "SPOOL_NOW="+meta.Now.UTC().Format(time.RFC3339))
	spool := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		return cmd
	}

	id, prio, err := scaleTarget(spool("task", "list", "--json"), meta.Tasks/2)
	if err != nil {
		return col, err
	}
	updates := 0
	claim := func() (string, error) {
		out, err := run(dir, env, bin, "next", "--json")
		if err != nil {
			return "", err
		}
		var c *struct{ ID string }
		if err := json.Unmarshal([]byte(out), &c); err != nil || c == nil || c.ID == "" {
			return "", fmt.Errorf("next --json claimed nothing: %q (%v)", out, err)
		}
		return c.ID, nil
	}
	fixed := func(args ...string) func() ([]string, error) {
		return func() ([]string, error) { return args, nil }
	}
	for _, c := range []struct {
		row          string
		warmup, runs int
		prepare      func() ([]string, error) // untimed; returns the arguments to time
	}{
		{"version", 1, runs, fixed("version")},
		{"ready", 1, runs, fixed("ready", "--json")},
		{"ready-all", 1, runs, fixed("ready", "--json", "-n", "0")},
		{"next", 1, runs, fixed("next", "--json")},
		{"add", 1, runs, fixed("task", "add", "Benchmark task added by spoolbench", "-p", "2", "-l", "backend")},
		{"update", 1, runs, func() ([]string, error) { // a change every time: the old priority and another in turn
			updates++
			p := prio
			if updates%2 == 1 {
				p = (prio + 1) % 5
			}
			return []string{"task", "update", id, "-p", strconv.Itoa(p)}, nil
		}},
		{"show", 1, runs, fixed("task", "show", id)},
		{"done", 1, runs, func() ([]string, error) {
			id, err := claim()
			return []string{"done", id}, err
		}},
		{"fail", 1, runs, func() ([]string, error) {
			id, err := claim()
			return []string{"fail", id, "-e", "benchmark failure"}, err
		}},
		{"list", 1, runs, fixed("task", "list", "--json")},
		{"status", 1, runs, fixed("status")},
		{"replay", 0, slowRuns, fixed("replay")},
		{"verify", 0, slowRuns, fixed("verify")},
	} {
		fmt.Fprintf(os.Stderr, "scale %d: %s\n", meta.Tasks, c.row)
		var args []string
		var stderr *capBuffer
		t, err := repeatPrepared(c.warmup, c.runs, func() (*exec.Cmd, error) {
			var err error
			if args, err = c.prepare(); err != nil {
				return nil, err
			}
			cmd := spool(args...)
			stderr = &capBuffer{}
			cmd.Stdout, cmd.Stderr = io.Discard, stderr
			return cmd, nil
		})
		if err != nil {
			return col, fmt.Errorf("%w\n%s", err, stderr)
		}
		col.medians[c.row] = t.wall[len(t.wall)/2]
		med := ms(col.medians[c.row])
		col.cells[c.row] = fmt.Sprintf("%s, %d MiB", msCell(med), (t.maxRSS+512)/1024)
		fmt.Printf("%s: spool %-42s wall median %8.1f ms (min %8.1f, max %8.1f)  cpu median %8.1f ms  peak RSS %4d MiB  (%d runs)\n",
			count(meta.Tasks), strings.Join(args, " "), med, ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), ms(t.cpu[len(t.cpu)/2]), t.maxRSS/1024, c.runs)
	}

	// What encoding the output of the commands whose output grows with the
	// data costs by itself.
	self, err := os.Executable()
	if err != nil {
		return col, err
	}
	for _, e := range []struct{ row, of, kind string }{
		{"ready-all-enc", "ready-all", "ready"},
		{"list-enc", "list", "list"},
	} {
		file := dir + "." + e.kind + ".json"
		err := func() error {
			defer os.Remove(file)
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			defer f.Close()
			cmd := spool("ready", "--json", "-n", "0")
			if e.kind == "list" {
				cmd = spool("task", "list", "--json")
			}
			stderr := &capBuffer{}
			cmd.Stdout, cmd.Stderr = f, stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr)
			}
			out, err := run("", nil, self, "scale-encode", "-kind", e.kind, file)
			if err != nil {
				return err
			}
			var r scaleEncoded
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return err
			}
			if !r.Same {
				fmt.Fprintf(os.Stderr, "scale %d: note: the output of %s re-encoded differs from spool's\n", meta.Tasks, e.of)
			}
			col.cells[e.row] = fmt.Sprintf("%s (the process: %.1f×); spool's appenders %s", msCell(ms(r.Median)),
				float64(col.medians[e.of])/float64(r.Median), msCell(ms(r.Fast)))
			fmt.Printf("%s: encoding the output of %s alone (%d bytes, %d items): encoding/json median %.1f ms, spool's appenders %.1f ms; identical to spool's: %v\n",
				count(meta.Tasks), e.of, r.Bytes, r.Items, ms(r.Median), ms(r.Fast), r.Same)
			return nil
		}()
		if err != nil {
			return col, err
		}
	}
	return col, nil
}

// capBuffer keeps the first 4 KiB written to it.
type capBuffer struct{ bytes.Buffer }

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := 4096 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// scaleTarget runs cmd (task list --json) and returns the first open task
// with a blocker from the half-th on (or the first open one), and its
// priority: a task next does not claim soon. It decodes one task at a time.
func scaleTarget(cmd *exec.Cmd, half int) (string, int, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, err
	}
	stderr := &capBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return "", 0, err
	}
	var id string
	var prio int
	dec := json.NewDecoder(stdout)
	_, err = dec.Token()
	for i := 0; err == nil && dec.More(); i++ {
		var t workqueue.ListItemJSON
		if err = dec.Decode(&t); err == nil && i >= half && t.Status == workqueue.StatusOpen && (id == "" || t.DependencyCount > 0) {
			id, prio = t.ID, t.Priority
			if t.DependencyCount > 0 {
				break
			}
		}
	}
	io.Copy(io.Discard, stdout)
	if werr := cmd.Wait(); werr != nil {
		return "", 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), werr, stderr)
	}
	if err != nil || id == "" {
		return "", 0, fmt.Errorf("%s: no open task from the %d-th on (%v)", strings.Join(cmd.Args, " "), half, err)
	}
	return id, prio, nil
}

// scaleEncoded is what scale-encode prints.
type scaleEncoded struct {
	Median time.Duration `json:"median"` // encoding/json
	Fast   time.Duration `json:"fast"`   // spool's own appenders (jsonout.WriteList)
	Bytes  int           `json:"bytes"`
	Items  int           `json:"items"`
	Same   bool          `json:"same"` // the encoding is the file again
}

// scaleEncodeMain decodes FILE, the output of spool ready --json (-kind
// ready) or spool task list --json (-kind list), into the types spool
// encodes, and prints how long encoding it again as spool does (indented,
// HTML not escaped) takes, the median of 7:
//
//	spoolbench scale-encode -kind ready|list FILE
func scaleEncodeMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench scale-encode", flag.ExitOnError)
	kind := fs.String("kind", "", "ready or list")
	fs.Parse(args)
	if fs.NArg() != 1 || *kind != "ready" && *kind != "list" {
		return fmt.Errorf("%w: spoolbench scale-encode -kind ready|list FILE", errUsage)
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var ready []workqueue.TaskJSON
	var list []workqueue.ListItemJSON
	var v any = &ready
	if *kind == "list" {
		v = &list
	}
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var buf bytes.Buffer
	var ds []time.Duration
	for range 7 {
		buf.Reset()
		start := time.Now()
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	same := bytes.Equal(buf.Bytes(), b)
	item := func(i int) any { return ready[i] }
	if *kind == "list" {
		item = func(i int) any { return list[i] }
	}
	var fast []time.Duration
	for range 7 {
		buf.Reset()
		start := time.Now()
		if err := jsonout.WriteList(&buf, len(ready)+len(list), item, false); err != nil {
			return err
		}
		fast = append(fast, time.Since(start))
	}
	slices.Sort(fast)
	return json.NewEncoder(os.Stdout).Encode(scaleEncoded{Median: ds[len(ds)/2], Fast: fast[len(fast)/2], Bytes: len(b),
		Items: len(ready) + len(list), Same: same && bytes.Equal(buf.Bytes(), b)})
}

// printScaleTable prints the results as a markdown table, a column per dataset.
func printScaleTable(cols []scaleColumn, runs, slowRuns int) {
	fmt.Println()
	fmt.Printf("Whole-process medians (%d runs; replay and verify %d) and peak RSS, on the realistic log; clock at the log's end.\n", runs, slowRuns)
	printLoad()
	fmt.Println()
	head, rule := "| command |", "| --- |"
	for _, c := range cols {
		head += fmt.Sprintf(" %s tasks / %s events |", count(c.meta.Tasks), count(c.meta.Events))
		rule += " --- |"
	}
	fmt.Println(head)
	fmt.Println(rule)
	for _, r := range scaleRows {
		line := "| " + r[1] + " |"
		for _, c := range cols {
			cell := c.cells[r[0]]
			if cell == "" {
				cell = "–"
			}
			line += " " + cell + " |"
		}
		fmt.Println(line)
	}
}

// msCell is a time in milliseconds for the table: one decimal below 100 ms,
// seconds from 1 s.
func msCell(ms float64) string {
	switch {
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

// count is n as 1k, 10k, 1.2M.
func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.0fk", float64(n)/1000)
	}
	return strconv.Itoa(n)
}
