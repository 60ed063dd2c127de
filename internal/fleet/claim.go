package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// Claims takes claims through the remote's sync branch (sync.claims =
// remote): under the log's lock it fetches and brings the remote's events
// in, the command decides on that log, and the claim's lines are pushed
// on the fetched tip, without force, before they are written locally. A
// refused push (another machine claimed first) is store.ErrRemoteMoved,
// and store.Claim decides again. So two machines never hold one claim,
// and no claim is in a local log that the remote does not have.
type Claims struct {
	st *store.Store
	o  Options // resolved at the first claim
	// Offline claims locally without asking the remote (--offline);
	// OfflineLocal does so when the remote cannot be reached
	// (sync.offline_claims = local). Either warns.
	Offline, OfflineLocal bool
	Warn                  func(string)
	cache                 *cache
	required              bool // sync.claims = remote: a clone without a remote cannot claim
	resolved              bool
	err                   error
}

// ClaimsFrom reads sync.claims: nil when claims are local. The default,
// auto, claims through the remote whenever the clone has one (sync.remote,
// or merge.remote when git has it), so that two clones never both hold one
// task, entry, job or promotion; a clone with no remote claims locally.
// Which remote is worked out at the first claim: most commands claim
// nothing.
func ClaimsFrom(st *store.Store, offline bool, warn func(string)) *Claims {
	set := SettingsFrom(st.Config)
	mode := set.Claims
	if mode == ClaimsLocal {
		return nil
	}
	return &Claims{st: st, required: mode == ClaimsRemote, Offline: offline, OfflineLocal: set.OfflineClaims == OfflineLocal, Warn: warn}
}

// options resolves the remote once: a worker claims many times.
func (c *Claims) options(ctx context.Context) (Options, error) {
	if !c.resolved {
		c.o, c.err = OptionsFrom(ctx, c.st, "")
		if c.err == nil && c.o.Remote == "" && c.required {
			c.err = unknownRemote(SettingsFrom(c.st.Config).MergeRemote)
		}
		c.resolved = true
	}
	return c.o, c.err
}

// Values of sync.claims and sync.offline_claims.
const (
	ClaimsAuto    = "auto"
	ClaimsLocal   = "local"
	ClaimsRemote  = "remote"
	OfflineRefuse = "refuse"
	OfflineLocal  = "local"
)

// Patience bounds how long a claim that keeps losing the race tries: a
// worker has nothing better to do than wait its turn.
func (c *Claims) Patience() time.Duration { return 30 * time.Second }

// Begin starts a claim: its rounds share its place in the remote's
// waiting room (turn.go).
func (c *Claims) Begin() store.Claim { return &claim{c: c} }

// claim is one claim through the remote, across its rounds.
type claim struct {
	c    *Claims
	turn turn
	o    Options // of the last round that reached the remote
	// What the next pause enters the waiting room with, outside the log's
	// lock: this clone's writer and a commit the remote has.
	writer, at string
}

// Pause waits for the claim's next round, without the log's lock: it
// enters the waiting room when the last round lost or let others go
// first, and after the latter looks at the room again until none is ahead
// (or the claim stopped waiting for them).
func (k *claim) Pause(ctx context.Context) error {
	dir := k.c.st.Repo.Root
	if k.at != "" {
		k.network(ctx, func(ctx context.Context) { k.turn.enter(ctx, dir, k.o, k.writer, k.at, time.Now()) })
		k.at = ""
	}
	sweep := func() { k.network(ctx, func(ctx context.Context) { k.turn.sweep(ctx, dir, k.o) }) }
	for {
		sweep()
		yielding := k.turn.ahead > 0
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(k.turn.pause()):
		}
		if !yielding {
			return nil
		}
		room := waitingRefs(k.o.Branch)
		var refs map[string]string
		var err error
		k.network(ctx, func(ctx context.Context) { refs, err = git.RemoteRefs(ctx, dir, k.o.Remote, room+"*") })
		if err != nil {
			return nil // the round finds out
		}
		if k.turn.yield(entriesIn(refs, room), time.Now()) == 0 {
			sweep()
			return nil
		}
	}
}

// End takes away what the claim left in the waiting room, without the
// log's lock.
func (k *claim) End(ctx context.Context) {
	if k.o.Remote != "" {
		k.network(ctx, func(ctx context.Context) { k.turn.leave(ctx, k.c.st.Repo.Root, k.o) })
	}
}

// network runs fn against the remote within a claim's timeout, git killed
// with what it started at its end.
func (k *claim) network(ctx context.Context, fn func(context.Context)) {
	ctx, cancel := context.WithTimeout(git.Unattended(ctx), k.c.Timeout())
	defer cancel()
	fn(ctx)
}

// Prepare brings the remote's events into the local log (the caller holds
// the log's lock: sess) and returns what publishes the claim there. A
// round that finds claims in the waiting room that go first ends before
// it fetches: store.ErrRemoteMoved.
func (k *claim) Prepare(ctx context.Context, sess *eventlog.Session) (func(writer string, lines []byte) error, error) {
	c := k.c
	if _, err := c.options(ctx); err != nil || c.o.Remote == "" {
		return nil, err // no remote: the claim is local, and exclusive, since this clone is the only one
	}
	if c.Offline {
		c.Warn(fmt.Sprintf("--offline: the claim is local, not taken through %s/%s; another machine may claim the same", c.o.Remote, c.o.Branch))
		return nil, nil
	}
	dir := c.st.Repo.Root
	if c.cache == nil {
		c.cache = loadCache(c.st)
	}
	k.o = c.o
	k.turn.each = c.Timeout() + time.Second // a round may take Timeout
	// The fetch and the push share one deadline: the log's lock is held
	// throughout, and another command waits for it only lock.timeout.
	deadline := time.Now().Add(c.Timeout())
	var tip string
	var remote map[string]git.Blob
	ahead := 0
	err := c.network(ctx, deadline, "fetch", func(ctx context.Context) error {
		branch, room := "refs/heads/"+c.o.Branch, waitingRefs(c.o.Branch)
		refs, err := git.RemoteRefs(ctx, dir, c.o.Remote, branch, room+"*")
		if err != nil {
			return unreachable(c.o, err)
		}
		if ahead = k.turn.yield(entriesIn(refs, room), time.Now()); ahead > 0 {
			return nil
		}
		tip, remote, err = fetchTip(ctx, c.st, c.o, refs[branch])
		return err
	})
	if err != nil {
		return c.offline(err)
	}
	if ahead > 0 {
		// Waiting too: in line (at the pause), so that a claim that comes
		// after the ones ahead does not win this one's turn when they are
		// done.
		if at, ok := git.ReadRef(ctx, c.st.Repo, TrackingRef(c.o)); ok {
			k.writer, k.at = sess.Writer(), at
		}
		return nil, fault.New(CodeSyncContended, store.ErrRemoteMoved, fmt.Sprintf("%d claims waiting longer for %s/%s go first; try again", ahead, c.o.Remote, c.o.Branch),
			"remote", c.o.Remote, "branch", c.o.Branch)
	}
	snaps, _, err := integrateIn(ctx, c.st, sess, c.o, remote, c.cache)
	if err != nil {
		return nil, err
	}
	for _, s := range snaps {
		if s.forked && s.name == sess.Writer()+eventlog.Ext {
			// Pushing the claim would put this clone's file over the copy
			// another machine writing as this writer pushed first.
			return nil, fmt.Errorf("%w: %s/%s holds this clone's file (writer %s) as another machine wrote it: two machines write as this writer, "+
				"and a claim cannot be shared until this clone takes a new writer id (spool doctor --repair)", eventlog.ErrForked, c.o.Remote, c.o.Branch, sess.Writer())
		}
	}
	parents, err := parentsOf(ctx, c.st, c.o, tip)
	if err != nil {
		return nil, err
	}
	c.cache.save()
	return func(writer string, lines []byte) error {
		snaps, err := withLines(snaps, c.st.Log.Dir(), writer+eventlog.Ext, lines)
		if err != nil {
			return err
		}
		tree, _, err := writeTree(ctx, dir, snaps, remote, c.cache)
		if err != nil {
			return err
		}
		own := snaps[len(snaps)-1]
		p := pendingClaim{Remote: c.o.Remote, Branch: c.o.Branch, File: own.name, Size: own.base, Lines: string(lines), Tip: &tip}
		if err := c.savePending(p); err != nil {
			return err
		}
		var commit string
		var leave []string // this claim's entry goes with the push that wins
		if k.turn.listed {
			leave = append(leave, ":"+k.turn.own.ref)
		}
		err = c.network(ctx, deadline, "push", func(ctx context.Context) (err error) {
			commit, err = push(ctx, dir, c.o, tree, parents, writtenBy(snaps), fmt.Sprintf("spool claim: %d events by %s", bytes.Count(lines, []byte{'\n'}), writer), leave...)
			return err
		})
		if errors.Is(err, store.ErrRemoteMoved) {
			k.writer, k.at = writer, tip // in line at the pause
		} else if err == nil && k.turn.listed {
			k.turn.listed, k.turn.tried = false, false // the push took it away
		}
		if f, ok := fault.As(err); errors.Is(err, store.ErrRemoteMoved) || ok && f.Has(CodeRemoteUnreachable) && !pushTimedOut(err) {
			c.clearPending() // refused, or never reached: the lines are not on the remote
		} else if pushTimedOut(err) && git.LocalRemote(context.WithoutCancel(ctx), dir, c.o.Remote) {
			// Killed at the deadline with its session, a local remote's
			// receive-pack included: it took the push already or never will.
			p.Dead = true
			c.savePending(p)
		}
		if err != nil {
			if _, err := c.offline(err); err == nil {
				return nil // claimed locally, with a warning
			}
			return err
		}
		if err := track(ctx, c.st, c.o, commit, parents, snaps); err != nil {
			c.Warn(err.Error())
		}
		c.cache.expect(snaps[len(snaps)-1])
		c.cache.see(TrackingRef(c.o), commit, snapLines(snaps)) // spool status counts from it
		c.cache.save()
		return nil
	}, nil
}

// errTimedOut is a claim's fetch or push cut off at its deadline: a push
// may have reached the remote all the same.
var errTimedOut = errors.New("the claim's deadline passed")

func pushTimedOut(err error) bool { return errors.Is(err, errTimedOut) }

// Timeout is how long a claim may wait on the remote, its fetch and its
// push together: half of lock.timeout, since it holds the log's lock
// meanwhile and another command waits for the lock only lock.timeout.
// Read at each claim: spool watch rereads the configuration.
func (c *Claims) Timeout() time.Duration { return SettingsFrom(c.st.Config).LockTimeout / 2 }

// network runs a claim's fetch or push (what) against the remote until
// deadline: git is then killed, with whatever it started (git.Unattended),
// and the claim fails as remote_unreachable, saying so.
func (c *Claims) network(ctx context.Context, deadline time.Time, what string, fn func(context.Context) error) error {
	nctx, cancel := context.WithDeadline(git.Unattended(ctx), deadline)
	defer cancel()
	err := fn(nctx)
	if err == nil || ctx.Err() != nil || !errors.Is(nctx.Err(), context.DeadlineExceeded) || errors.Is(err, eventlog.ErrLockTimeout) {
		return err
	}
	timeout := c.Timeout()
	msg := fmt.Sprintf("%s did not answer the claim's %s within %s (half of lock.timeout: a claim holds the log's lock meanwhile); nothing was claimed and the local log is unchanged",
		c.o.Remote, what, timeout)
	if what == "push" {
		msg += fmt.Sprintf(" (if %s took the push after all, the next sync brings the claim in and its lease runs out unused)", c.o.Remote)
	}
	return fault.New(CodeRemoteUnreachable, errors.Join(errTimedOut, err), msg, "remote", c.o.Remote, "timeout", timeout.String())
}

// A claim's lines reach the remote before the local file. Killed in
// between, spool would not know whether the remote took them, and an
// append here before it learns would fork this clone's file (two lines
// after one). So the lines are recorded before the push, and the next
// write (Settle) finds them in the local file, or asks the remote and
// brings them in (or learns they never landed), before anything is
// appended.
//
// Asking the remote once is not enough: a push whose client was killed
// after sending the pack may still land, as the server (here a local
// remote's receive-pack, which outlives spool; elsewhere a busy host)
// finishes it, after Settle found the branch without the lines. Git moves
// the branch only from the tip the push was built on (Tip), so Settle
// makes sure that tip is gone before it lets a write append: a branch
// that moved elsewhere can no longer take the push, and a branch still at
// Tip is moved by Settle itself (fence), with this clone's files as they
// are, so that the push, if it lands at all, lands first and is brought
// in.
type pendingClaim struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	File   string `json:"file"`  // this clone's writer file
	Size   int64  `json:"size"`  // its length before the lines
	Lines  string `json:"lines"` // what the claim appends
	// Tip is the remote's tip the claim's commit was built on ("": the
	// branch did not exist), the only one its push can move the branch
	// from; nil in a record of an older spool, which did not say.
	Tip *string `json:"tip,omitempty"`
	// Dead says the push was killed with the remote's side of it (a local
	// remote's receive-pack, at the claim's deadline): what the remote has
	// now is all it will ever take of it.
	Dead bool `json:"dead,omitempty"`
}

func (c *Claims) pendingPath() string {
	return filepath.Join(c.st.Repo.PrivateDir(), "claim-pending.json")
}

func (c *Claims) savePending(p pendingClaim) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return durable.WriteFile(c.pendingPath(), b, 0o644)
}

func (c *Claims) clearPending() { os.Remove(c.pendingPath()) }

// Settle runs under the log's lock before a write appends: a claim killed
// while its lines were pushed (see pendingClaim) is settled first. The
// local file holding the lines settles it; else the remote is asked, and
// its copy brought in when it took them; when it did not, the branch is
// moved off the claim's tip first if it is still there (fence), so that
// the push cannot land after this clone's file grew. A remote that cannot
// be reached leaves it unsettled, and the write refused: appending could
// fork this clone's file.
func (c *Claims) Settle(ctx context.Context, sess *eventlog.Session) error {
	b, err := os.ReadFile(c.pendingPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var p pendingClaim
	if err != nil || json.Unmarshal(b, &p) != nil {
		c.clearPending() // unreadable: written whole or not at all, so never a real one
		return nil
	}
	path := filepath.Join(c.st.Log.Dir(), p.File)
	if fi, err := os.Stat(path); err == nil && fi.Size() != p.Size || errors.Is(err, fs.ErrNotExist) && p.Size != 0 {
		// The lines are there (the claim finished), or the file moved on
		// some other way: nothing to wait for, and the file (290 MB at a
		// million events) is not read.
		c.clearPending()
		return nil
	}
	local, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if int64(len(local)) != p.Size {
		c.clearPending() // it changed meanwhile
		return nil
	}
	o := Options{Remote: p.Remote, Branch: p.Branch, Attempts: 10}
	// The log's lock is held: the remote is given a claim's deadline, as a
	// claim's fetch and push are, and whatever git started is killed then.
	nctx, cancel := context.WithTimeout(git.Unattended(ctx), c.Timeout())
	defer cancel()
	unknown := func(err error) error {
		if ctx.Err() == nil && errors.Is(nctx.Err(), context.DeadlineExceeded) {
			err = fault.New(CodeRemoteUnreachable, errors.Join(errTimedOut, err), fmt.Sprintf("%s did not answer within %s", p.Remote, c.Timeout()), "remote", p.Remote)
		}
		if f, ok := fault.As(err); ok && f.Has(CodeRemoteUnreachable) {
			return fault.New(CodeRemoteUnreachable, err, fmt.Sprintf("a claim was being pushed to %s/%s when spool stopped, and whether the remote took it "+
				"is unknown until it answers: nothing is appended until then (%s)", p.Remote, p.Branch, f.Message), "remote", p.Remote)
		}
		return err
	}
	for attempt := range o.Attempts {
		if err := pause(nctx, attempt); err != nil {
			return unknown(err)
		}
		tip, remote, err := fetch(nctx, c.st, o)
		if err != nil {
			return unknown(err)
		}
		if blob, ok := remote[p.File]; ok {
			theirs, err := git.ReadBlob(ctx, c.st.Repo.Root, blob.Hash)
			if errors.Is(err, git.ErrNotAFile) {
				theirs, err = nil, nil // holds no claim
			}
			if err != nil {
				return err
			}
			if bytes.HasPrefix(eventlog.Whole(theirs), append(local, p.Lines...)) {
				// The remote took the claim: its lines are this clone's.
				if _, err := sess.Receive(p.File, theirs, p.Remote+"/"+p.Branch); err != nil {
					return err
				}
				c.clearPending()
				return nil
			}
		}
		if p.Dead || p.Tip != nil && tip != *p.Tip {
			// The push is dead, or the branch moved on without the lines:
			// the push, which could only move it from *p.Tip, can no
			// longer land.
			c.clearPending()
			return nil
		}
		// The branch is where the claim found it: the push may still land.
		err = c.fence(nctx, sess, o, tip, remote)
		if errors.Is(err, store.ErrRemoteMoved) {
			continue // the push landed first, or another machine moved the branch: look again
		}
		if err != nil {
			return unknown(err)
		}
		c.clearPending()
		return nil
	}
	return contended(o, o.Attempts)
}

// fence moves the remote's branch off tip, where an interrupted claim's
// push may still land, by pushing this clone's files as they are on it (a
// sync's commit, the claim's lines not among them). Once it is taken, the
// claim's push is refused; a fence refused is store.ErrRemoteMoved.
func (c *Claims) fence(ctx context.Context, sess *eventlog.Session, o Options, tip string, remote map[string]git.Blob) error {
	if c.cache == nil {
		c.cache = loadCache(c.st)
	}
	defer c.cache.save()
	snaps, _, err := integrateIn(ctx, c.st, sess, o, remote, c.cache)
	if err != nil {
		return err
	}
	tree, _, err := writeTree(ctx, c.st.Repo.Root, snaps, remote, c.cache)
	if err != nil {
		return err
	}
	parents, err := parentsOf(ctx, c.st, o, tip)
	if err != nil {
		return err
	}
	// A new commit even when the tree is tip's: the branch must move.
	commit, err := push(ctx, c.st.Repo.Root, o, tree, parents, writtenBy(snaps), "spool: settle an interrupted claim")
	if err != nil {
		return err
	}
	c.cache.see(TrackingRef(o), commit, snapLines(snaps))
	if err := track(ctx, c.st, o, commit, parents, snaps); err != nil {
		c.Warn(err.Error())
	}
	return nil
}

// offline is a claim's answer to err: local, with a warning, when the
// remote is unreachable and sync.offline_claims allows it.
func (c *Claims) offline(err error) (func(string, []byte) error, error) {
	if f, ok := fault.As(err); ok && f.Has(CodeRemoteUnreachable) && c.OfflineLocal {
		c.Warn(fmt.Sprintf("%s; the claim is local (sync.offline_claims = local): another machine may claim the same", err))
		return nil, nil
	}
	return nil, err
}

// withLines is the snapshots with lines appended to the writer's file, as
// the log will have it once they are written. The file is not read here:
// at a million events it is 290 MB, of which a claim stores its last part.
func withLines(snaps []snapshot, dir, name string, lines []byte) ([]snapshot, error) {
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	own := snapshot{dir: dir, name: name, extra: lines}
	if fi != nil {
		own.base = fi.Size()
	}
	out := make([]snapshot, 0, len(snaps)+1)
	for _, s := range snaps {
		if s.name != name {
			out = append(out, s)
		}
	}
	return append(out, own), nil
}
