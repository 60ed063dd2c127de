// Package store opens a spool repository: its paths, configuration, event log
// and projections, and runs the one write path (lock, catch up, decide,
// append, save).
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// ErrNotInitialized is a repository without .spool/.
var (
	ErrNotInitialized  = errors.New("spool is not initialized in this repository")
	CodeNotInitialized = fault.Register(fault.Environment, "not_initialized")
)

// Specs are all projections, in the order they are replayed and reported.
var Specs = []projections.Spec{
	projections.StatsSpec,
	workqueue.Spec,
	workqueue.QueueSpec,
	workqueue.IDsSpec,
	mergequeue.Spec,
	prdqueue.Spec,
	jobs.Spec,
	plans.Spec,
	orchestrator.Spec,
}

// specs are Specs; with SPOOL_TEST_AMORTIZE=N (tests), the tables are
// saved once 1/N of the log is unsaved, and every save put off writes an
// overlay: what a log of a million events does, on a test's few hundred.
func specs() []projections.Spec {
	n, _ := strconv.Atoi(os.Getenv("SPOOL_TEST_AMORTIZE"))
	if n <= 0 {
		return Specs
	}
	out := slices.Clone(Specs)
	for i := range out {
		if out[i].Amortize > 0 {
			out[i].Amortize = min(out[i].Amortize, n)
		}
		if out[i].Overlay > 0 {
			out[i].Overlay = 1
		}
	}
	return out
}

// ReservedPrefixes are event namespaces only spool's own commands append.
var ReservedPrefixes = []string{"spool.", "task.", "work.", "merge.", "job.", "prd.", "orch.", "orchestrator.", "plan.", "feedback."}

// Store is an opened spool repository.
type Store struct {
	Repo   *git.Repo
	Config *config.Config
	Log    *eventlog.Log
	Engine *projections.Engine
	warn   func(string)
	opts   []Option // as opened: Options

	// views are the projections this Store has loaded, kept so that a
	// long-running command (the merge train) does not decode its snapshots
	// again for every write; catching up from the log keeps them current.
	views    map[string]*projections.View
	mu       sync.Mutex // one Read or Write at a time uses the views
	reprimed bool       // reprime ran: it runs once
	// wholeAgain counts, by view, the reads in a row that found the view
	// made whole (projections.Expander): past maxReopen, every read makes
	// it whole again (the board's Tasks page reads every task), and it is kept.
	wholeAgain map[string]int

	// DeferSave makes Write leave the projection files for Flush (or the
	// next Read) to write. The log is the truth and is always on disk before
	// Write returns; a projection file behind it is caught up by whoever
	// reads it next. The merge train sets it: it writes several events per
	// entry and saves once.
	DeferSave bool

	// Claims, when set, takes claims (Claim) through the git remote
	// (internal/fleet, sync.claims = remote).
	Claims Remote

	received *received // what the copies of the log held when last received

	checkDecide bool // SPOOL_CHECK_DECIDE: every decision runs twice (Decider)
}

// Remote takes claims through the git remote.
type Remote interface {
	// Begin starts a claim, which may take several rounds (a push
	// refused, or the claim letting another go first): its rounds share
	// its place in line.
	Begin() Claim
	// Patience bounds how long a claim that keeps losing the race tries.
	Patience() time.Duration
	// Settle runs under the log's lock before any write appends: a claim
	// killed while it published its lines must be settled (are they on the
	// remote?) before this clone's file grows, or it would fork.
	Settle(ctx context.Context, sess *eventlog.Session) error
}

// Claim is one claim through the remote, across its rounds.
type Claim interface {
	// Prepare runs under the log's lock before a round reads the log: it
	// brings the remote's events into the local log and returns what
	// publishes the claim's lines there. A nil publish claims locally (the
	// remote is unreachable and offline claims are allowed).
	// ErrRemoteMoved ends the round: another machine moved first, or goes
	// first.
	Prepare(ctx context.Context, sess *eventlog.Session) (publish func(writer string, lines []byte) error, err error)
	// Pause waits before the next round, without the log's lock.
	Pause(ctx context.Context) error
	// End runs when the claim is over, whether it won or not.
	End(ctx context.Context)
}

// ErrRemoteMoved is a claim's push refused because another machine moved
// the remote first: the claim decides again on what it fetches.
var ErrRemoteMoved = errors.New("the remote moved first")

// Hold runs fn under the lock Read and Write take: a reader that keeps a
// state (a projection's snapshot) takes it there, so that no write of
// another goroutine folds into it meanwhile.
func (s *Store) Hold(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

// Flush saves projections a deferred Write left unsaved.
func (s *Store) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.Log.Begin(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	for _, v := range s.views {
		if _, err := v.CatchUp(ctx); err != nil {
			return err
		}
		if err := v.Save(); err != nil {
			return err
		}
	}
	return nil
}

// view returns the loaded view of names, loading it on first use.
func (s *Store) view(names []string) (*projections.View, error) {
	key := strings.Join(names, "\x00")
	if v, ok := s.views[key]; ok {
		switch {
		case !v.Expanded():
			delete(s.wholeAgain, key)
			return v, nil
		case s.wholeAgain[key] >= maxReopen:
			return v, nil
		}
		if s.wholeAgain == nil {
			s.wholeAgain = map[string]int{}
		}
		s.wholeAgain[key]++ // opened afresh below: the snapshot answers the next reads faster
	}
	v, err := s.Engine.Open(names...)
	if err != nil {
		return nil, err
	}
	if s.views == nil {
		s.views = map[string]*projections.View{}
	}
	s.views[key] = v
	return v, nil
}

// maxReopen is how many reads in a row may find a view made whole and
// open it afresh: a view that every read makes whole is kept whole.
const maxReopen = 2

// What spool keeps for a clone lives under the git common dir (see
// receive.go): the log, the projections, the outputs of test runs, agents
// and jobs. Only the configuration is in the work tree, to be committed.
func EventsDir(r *git.Repo) string  { return filepath.Join(r.PrivateDir(), "events") }
func StateDir(r *git.Repo) string   { return filepath.Join(r.PrivateDir(), "state") }
func RunsDir(r *git.Repo) string    { return filepath.Join(r.PrivateDir(), "runs") }
func JobsDir(r *git.Repo) string    { return filepath.Join(r.PrivateDir(), "jobs") }
func ScratchDir(r *git.Repo) string { return filepath.Join(r.PrivateDir(), "scratch") } // the merge train's worktrees
func ConfigPath(r *git.Repo) string { return filepath.Join(r.SpoolDir(), "config.json") }

// HasSpool says whether spool was set up in the repository: its
// configuration is in the work tree, this clone has a log (a branch from
// before spool init is checked out), or git brought a copy of the shared
// log (a fresh clone of a repository whose configuration was never
// committed on this branch).
func HasSpool(ctx context.Context, r *git.Repo) bool {
	for _, dir := range []string{r.SpoolDir(), EventsDir(r)} {
		if _, err := os.Stat(dir); err == nil {
			return true
		}
	}
	refs, err := git.BranchCopies(ctx, r.CommonDir, DefaultSyncBranch)
	return err == nil && len(refs) > 0
}

// Open finds the repository containing dir and requires spool init to have
// run and its configuration to name only keys this spool knows (a typo is
// never a setting silently not applied).
func Open(ctx context.Context, dir string, warn func(string), opts ...Option) (*Store, error) {
	s, err := OpenLenient(ctx, dir, warn, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.Config.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenLenient is Open that accepts a configuration with unknown keys: for
// the commands that show and fix it (spool config, spool doctor).
func OpenLenient(ctx context.Context, dir string, warn func(string), opts ...Option) (*Store, error) {
	r, err := git.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !HasSpool(ctx, r) {
		return nil, fault.New(CodeNotInitialized, ErrNotInitialized,
			fmt.Sprintf("%s has no .spool directory; run spool init", r.Root), "root", r.Root)
	}
	// A branch of the old layout still commits writer files: a fresh clone
	// brings .gitattributes but not the merge driver, so register it before
	// anything can merge a writer file as text. Best effort: a read-only
	// .git must not stop a read.
	if legacyAttributes(r) {
		if _, err := git.EnsureMergeDriver(ctx, r); err != nil && warn != nil {
			warn(fmt.Sprintf("the merge driver is not registered (%v); spool init registers it", err))
		}
	}
	s, err := OpenRepo(r, warn, opts...)
	if err != nil {
		return nil, err
	}
	// Whatever the command reads, it reads the events git brought since.
	s.receive(ctx, nil)
	return s, nil
}

// OpenRepo opens a discovered repository without requiring .spool/.
func OpenRepo(r *git.Repo, warn func(string), opts ...Option) (*Store, error) {
	cfg, err := config.Load(ConfigPath(r))
	if err != nil {
		return nil, err
	}
	log := eventlog.Open(eventlog.Options{
		Dir:         EventsDir(r),
		PrivateDir:  r.PrivateDir(),
		LockTimeout: config.SettingsFrom(cfg).LockTimeout,
		Warn:        warn,
		Signer:      &sign.EventSigner{Root: r.Root, Config: cfg},
		MayWrite:    func() error { return mayWrite(r.PrivateDir()) },
		Warning:     optionsOf(opts).warning,
	})
	if warn == nil {
		warn = func(string) {}
	}
	if err := exclude(r, workTreeFiles); err != nil && !storageError(err) { // a read-only clone reads on
		warn(fmt.Sprintf("git may list spool's files in the work tree: %v", err))
	}
	for _, p := range cfg.Defaulted() {
		warn(fmt.Sprintf("%s: %s", ConfigPath(r), p))
	}
	if unknown := cfg.Unknown(); len(unknown) > 0 && cfg.Newer() {
		warn(fmt.Sprintf("%s is for a newer spool: %s ignored", ConfigPath(r), strings.Join(unknown, ", ")))
	}
	return &Store{
		checkDecide: os.Getenv("SPOOL_CHECK_DECIDE") != "",
		Repo:        r,
		Config:      cfg,
		warn:        warn,
		opts:        opts,
		Log:         log,
		Engine: &projections.Engine{Log: log, Root: r.Root, FilesDir: StateDir(r), StateDir: StateDir(r), Specs: specs(),
			SpillDir: filepath.Join(StateDir(r), ".tmp"), Warn: warn, OnLargeSave: optionsOf(opts).onLargeSave},
	}, nil
}

// Read returns the named projections up to date. Reading needs no lock; the
// lock is taken only to persist projections that were behind (amortized
// projections catch up in memory until their save is due).
func (s *Store) Read(ctx context.Context, names ...string) (*projections.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receive(ctx, nil)
	if s.mayPrime() {
		// Like saving below, priming is for the next commands too: done
		// when the lock is free at once, the usual fold otherwise.
		if unlock, ok, _ := s.Log.TryLock(); ok {
			err := func() error { defer unlock(); return s.prime(ctx) }() // unlocked on a panic too
			if err != nil {
				return nil, err
			}
		}
	}
	v, err := s.view(names)
	if err != nil {
		return nil, err
	}
	if v.Unusable() && !s.reprimed && s.largeLog() {
		s.reprimed = true // a lock taken, it folds as before: once
		if unlock, ok, _ := s.Log.TryLock(); ok {
			v, err = func() (*projections.View, error) { defer unlock(); return s.reprime(ctx, names) }()
			if err != nil {
				return nil, err
			}
		}
	}
	stale, err := v.Stale()
	if err != nil || !stale {
		return v, err
	}
	if _, err := v.CatchUp(ctx); err != nil || !v.NeedsSave() {
		return v, err
	}
	// Saving is a courtesy to the next command: a read must neither wait for
	// the lock nor fail where nothing can be written (a read-only checkout,
	// a full disk).
	unlock, ok, err := s.Log.TryLock()
	if !ok {
		if err == nil || storageError(err) || errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		return nil, err
	}
	defer unlock()
	if _, err := v.CatchUp(ctx); err != nil {
		return nil, err
	}
	if err := v.Save(); err != nil && !storageError(err) {
		return nil, err
	}
	return v, nil
}

// storageError is a file system refusing a write: read-only, no permission,
// no space.
func storageError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// Decide returns the events a command appends, given up-to-date projections
// and the writer's session; a domain error appends nothing.
type Decide func(v *projections.View) ([]eventlog.Draft, error)

// Decider is a command's decision: the events to append, given up-to-date
// projections, and the result the command reports. It must be repeatable:
// it reads v and what it was given and changes nothing else, because a
// claim whose remote moved decides again on what it fetched, and with
// SPOOL_CHECK_DECIDE=1 (the tests) every decision runs twice and the two
// answers must match. A domain error appends nothing.
type Decider[R any] func(v *projections.View) ([]eventlog.Draft, R, error)

// Written is what a write appended, the projections after it, and its
// decision's result.
type Written[R any] struct {
	Events []eventlog.Event
	View   *projections.View
	Result R
}

// Mode is how a write reaches the log.
type Mode int

const (
	// Local appends under the log's lock.
	Local Mode = iota
	// Claiming takes the write through the git remote when the clone takes
	// claims there (Store.Claims): a claim, and what its holder records.
	Claiming
)

// Write runs the write path under the log's lock: catch up, decide,
// append, save. In Claiming mode with Claims set, it decides on the log
// with the remote's events brought in and appends only what the remote
// accepted; a push refused because another machine moved first, or a
// round that lets another claim go first, decides again after a pause,
// for up to Claims.Patience().
func Write[R any](ctx context.Context, s *Store, mode Mode, at time.Time, actor string, names []string, decide Decider[R]) (Written[R], error) {
	if mode == Local || s.Claims == nil {
		return writeOnce(ctx, s, at, actor, names, decide, nil)
	}
	claim := s.Claims.Begin()
	defer claim.End(context.WithoutCancel(ctx))
	deadline := time.Now().Add(s.Claims.Patience())
	for {
		w, err := writeOnce(ctx, s, at, actor, names, decide, claim)
		if !errors.Is(err, ErrRemoteMoved) || time.Now().After(deadline) {
			return w, err
		}
		if err := claim.Pause(ctx); err != nil {
			return Written[R]{}, err
		}
	}
}

// Write is the generic Write for a decision with no result.
func (s *Store) Write(ctx context.Context, at time.Time, actor string, names []string, decide Decide) ([]eventlog.Event, *projections.View, error) {
	w, err := Write(ctx, s, Local, at, actor, names, noResult(decide))
	return w.Events, w.View, err
}

// Claim is Write in Claiming mode.
func (s *Store) Claim(ctx context.Context, at time.Time, actor string, names []string, decide Decide) ([]eventlog.Event, *projections.View, error) {
	w, err := Write(ctx, s, Claiming, at, actor, names, noResult(decide))
	return w.Events, w.View, err
}

func noResult(decide Decide) Decider[struct{}] {
	return func(v *projections.View) ([]eventlog.Draft, struct{}, error) {
		drafts, err := decide(v)
		return drafts, struct{}{}, err
	}
}

func writeOnce[R any](ctx context.Context, s *Store, at time.Time, actor string, names []string, decide Decider[R], remote Claim) (Written[R], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w Written[R]
	sess, err := s.Log.Begin(ctx)
	if err != nil {
		return w, err
	}
	defer sess.Close()
	s.receive(ctx, sess)
	if s.Claims != nil {
		if err := s.Claims.Settle(ctx, sess); err != nil {
			return w, err
		}
	}
	var opt eventlog.AppendOptions
	if remote != nil {
		if opt.Publish, err = remote.Prepare(ctx, sess); err != nil {
			return w, err
		}
	}
	if s.mayPrime() {
		if err := s.prime(ctx); err != nil {
			return w, err
		}
	}
	if w.View, err = s.view(names); err != nil {
		return w, err
	}
	if w.View.Unusable() && !s.reprimed && s.largeLog() {
		if w.View, err = s.reprime(ctx, names); err != nil {
			return w, err
		}
	}
	if _, err := w.View.CatchUp(ctx); err != nil {
		return w, err
	}
	drafts, r, err := decide(w.View)
	if s.checkDecide {
		if err := repeatable(drafts, r, err, decide, w.View); err != nil {
			return w, err
		}
	}
	if err != nil {
		return w, err
	}
	w.Result = r
	if len(drafts) == 0 {
		return w, w.View.Save()
	}
	if w.Events, err = sess.Append(at, actor, drafts, opt); err != nil {
		return w, err
	}
	if _, err := w.View.CatchUp(ctx); err != nil {
		return w, err
	}
	if s.DeferSave {
		return w, nil
	}
	if err := w.View.Save(); err != nil {
		if !storageError(err) {
			return w, err
		}
		// The events are on disk and acknowledged; the projections catch up
		// from the log whenever they can be written again.
		s.warn(fmt.Sprintf("projections not saved: %v", err))
	}
	return w, nil
}

// repeatable decides again on v and reports a decision whose second answer
// differs from its first (drafts, r, err): a decide function that keeps
// state between calls, or that the first call's reads changed.
func repeatable[R any](drafts []eventlog.Draft, r R, err error, decide Decider[R], v *projections.View) error {
	drafts2, r2, err2 := decide(v)
	a, errA := json.Marshal(drafts)
	b, errB := json.Marshal(drafts2)
	switch {
	case errA != nil || errB != nil:
		return fmt.Errorf("internal error: a decision's drafts do not encode: %v", errors.Join(errA, errB))
	case !bytes.Equal(a, b):
		return fmt.Errorf("internal error: a decision is not repeatable: it decided %s, then %s", a, b)
	case fmt.Sprint(err) != fmt.Sprint(err2):
		return fmt.Errorf("internal error: a decision is not repeatable: it failed with %v, then %v", err, err2)
	case !reflect.DeepEqual(r, r2):
		return fmt.Errorf("internal error: a decision is not repeatable: it returned %+v, then %+v", r, r2)
	}
	return nil
}

// primeSize is the log size from which a command that finds projections
// without a snapshot folds the whole log once for all of them (prime):
// about 120,000 events. A variable for the tests.
var primeSize int64 = 32 << 20

// mayPrime says whether prime has something to do: no view loaded yet,
// a projection without a snapshot, and a log of primeSize or more.
func (s *Store) mayPrime() bool {
	return len(s.views) == 0 && s.Engine.Missing() && s.largeLog()
}

// reprime primes for a view with a snapshot another spool wrote (an
// upgrade changed its format or version), which would otherwise fold the
// whole log in memory, then opens the view again: once per Store, under
// the log's lock.
func (s *Store) reprime(ctx context.Context, names []string) (*projections.View, error) {
	s.reprimed = true
	if err := s.prime(ctx); err != nil {
		return nil, err
	}
	clear(s.views)
	return s.view(names)
}

// largeLog says whether the log is primeSize or more.
func (s *Store) largeLog() bool {
	entries, err := os.ReadDir(EventsDir(s.Repo))
	if err != nil {
		return false
	}
	var size int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			size += info.Size()
		}
	}
	return size >= primeSize
}

// prime is the first command of a fresh clone (or of one whose state was
// removed) on a large log: one fold of the whole log for every projection,
// the bulk spilled to disk, with the collector held as replay holds it
// (OnLargeFold), and saved; the command then opens the snapshots as any
// other does. Folding into the views in memory instead took 533 MiB on a
// million events. The caller holds the log's lock. Where nothing can be
// written (a read-only clone, a full disk), the command folds as before.
func (s *Store) prime(ctx context.Context) error {
	if f := optionsOf(s.opts).onLargeFold; f != nil {
		defer f()()
	}
	if _, err := s.Engine.Rebuild(ctx); err != nil && !storageError(err) {
		return err
	}
	return nil
}

// Rebuild replays every projection from scratch and saves them; it
// returns how many events it applied.
func (s *Store) Rebuild(ctx context.Context) (events int, err error) {
	sess, err := s.Log.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	s.receive(ctx, sess)
	return s.Engine.Rebuild(ctx)
}

// Env is what a domain's service needs for one command: the opened
// repository, the command's one clock reading, who acts (asked for on the
// first write: it may run git), and where warnings go.
type Env struct {
	Store *Store
	Now   time.Time
	Actor func(context.Context) (string, error)
	Warn  func(string)
}

// WriteAs is Write as the env's actor, at the env's time.
func WriteAs[R any](ctx context.Context, e Env, mode Mode, names []string, decide func(v *projections.View, actor string) ([]eventlog.Draft, R, error)) (Written[R], error) {
	actor, err := e.Actor(ctx)
	if err != nil {
		return Written[R]{}, err
	}
	return Write(ctx, e.Store, mode, e.Now, actor, names, func(v *projections.View) ([]eventlog.Draft, R, error) { return decide(v, actor) })
}

// Write is WriteAs for a decision with no result.
func (e Env) Write(ctx context.Context, names []string, decide func(v *projections.View, actor string) ([]eventlog.Draft, error)) ([]eventlog.Event, *projections.View, error) {
	return e.as(ctx, Local, names, decide)
}

// Claim is WriteAs in Claiming mode for a decision with no result.
func (e Env) Claim(ctx context.Context, names []string, decide func(v *projections.View, actor string) ([]eventlog.Draft, error)) ([]eventlog.Event, *projections.View, error) {
	return e.as(ctx, Claiming, names, decide)
}

func (e Env) as(ctx context.Context, mode Mode, names []string, decide func(v *projections.View, actor string) ([]eventlog.Draft, error)) ([]eventlog.Event, *projections.View, error) {
	w, err := WriteAs(ctx, e, mode, names, func(v *projections.View, actor string) ([]eventlog.Draft, struct{}, error) {
		drafts, err := decide(v, actor)
		return drafts, struct{}{}, err
	})
	return w.Events, w.View, err
}
