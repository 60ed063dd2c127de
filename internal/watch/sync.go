package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/store"
)

// appendGap is the least time between two syncs that this clone's appends
// asked for: a burst of appends is one push, not one each.
const appendGap = time.Second

// maxBackoff bounds the wait after failed syncs (unless sync.interval is
// longer).
const maxBackoff = 10 * time.Minute

// Sync shares the log through the remote while watch runs (spool sync,
// with the same settings): every sync.interval, and soon after this
// clone's writer file grew; with no remote it commits the local sync
// branch. Syncs run one at a time in
// a goroutine of their own, since a remote can be slow or hang; a failed
// one is reported (once until its message changes) and tried again later,
// waiting longer each time. With once, one sync runs in the pass.
func Sync(say Say, errorf func(driver string, err error), once bool) Driver {
	return &syncer{say: say, errorf: errorf, once: once, poke: make(chan struct{}, 1)}
}

type syncer struct {
	say    Say
	errorf func(string, error)
	once   bool
	poke   chan struct{}

	mu       sync.Mutex
	opts     fleet.Options // the latest pass's settings
	interval time.Duration
	on       bool
	done     chan struct{} // nil: the goroutine has not started
}

func (s *syncer) Name() string                             { return "sync" }
func (s *syncer) Recover(context.Context, store.Env) error { return nil } // the first pass syncs

func (s *syncer) Pass(ctx context.Context, env store.Env) (Result, error) {
	opts, interval, err := fleet.WatchOptions(ctx, env.Store)
	if err != nil {
		return Result{}, err
	}
	on := true
	if s.once {
		res, err := fleet.Sync(ctx, env.Store, opts)
		if err == nil {
			s.report(res)
		}
		return Result{}, err
	}
	s.mu.Lock()
	s.opts, s.interval, s.on = opts, interval, on
	if on && s.done == nil {
		s.done = make(chan struct{})
		st, err := ownStore(env)
		if err != nil {
			s.done = nil
			s.mu.Unlock()
			return Result{}, err
		}
		fault.Go(func() {
			defer close(s.done)
			s.run(ctx, st.Store)
		})
	}
	s.mu.Unlock()
	select {
	case s.poke <- struct{}{}:
	default:
	}
	return Result{}, nil
}

// Stop waits for a running sync, which ends with the watcher's ctx.
func (s *syncer) Stop(context.Context, store.Env) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	return awaitStop(s.Name(), done)
}

// run syncs when one is due, until ctx ends.
func (s *syncer) run(ctx context.Context, st *store.Store) {
	var sched schedule
	lastErr := ""
	for ctx.Err() == nil {
		s.mu.Lock()
		opts, interval, on := s.opts, s.interval, s.on
		s.mu.Unlock()
		mark := ownMark(st)
		due := sched.due(interval, mark)
		if on && !time.Now().Before(due) {
			res, err := fleet.Sync(ctx, st, opts)
			if ctx.Err() != nil {
				return
			}
			sched.done(time.Now(), mark, err == nil)
			switch {
			case err != nil && err.Error() != lastErr:
				lastErr = err.Error()
				s.errorf("sync", err)
			case err == nil:
				if lastErr != "" {
					s.say("sync", fmt.Sprintf("syncing with %s/%s again", res.Remote, res.Branch))
				}
				lastErr = ""
				s.report(res)
			}
			continue
		}
		wait := time.Duration(1<<63 - 1)
		if on {
			wait = time.Until(due)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-s.poke:
		}
		t.Stop()
	}
}

func (s *syncer) report(res fleet.Result) {
	if res.Received > 0 || res.Sent > 0 {
		s.say("sync", res.String())
	}
}

// schedule is when the next sync is due.
type schedule struct {
	last     time.Time // the last sync's end
	mark     mark      // this clone's writer file when the last good sync began
	failures int       // in a row
}

// due is when the next sync should run: sync.interval after the last one;
// appendGap after it when the writer file changed since the last good
// one; after a failure, the interval doubled for each failure in a row
// (appends wait for it too: an unreachable remote is not tried on every
// append).
func (s *schedule) due(interval time.Duration, now mark) time.Time {
	if s.failures > 0 {
		wait := interval << min(s.failures-1, 16)
		return s.last.Add(min(wait, max(interval, maxBackoff)))
	}
	if s.last.IsZero() {
		return s.last // never synced: now
	}
	if now != s.mark {
		return s.last.Add(min(appendGap, interval))
	}
	return s.last.Add(interval)
}

func (s *schedule) done(at time.Time, m mark, ok bool) {
	s.last = at
	if ok {
		s.mark, s.failures = m, 0
	} else {
		s.failures++
	}
}

// mark is a file as stat sees it: what changes when it is appended to or
// replaced.
type mark struct {
	inode uint64
	size  int64
	mtime int64
}

func ownMark(st *store.Store) mark {
	w, err := st.Log.WriterID()
	if err != nil {
		return mark{}
	}
	fi, err := os.Stat(filepath.Join(st.Log.Dir(), w+eventlog.Ext))
	if err != nil {
		return mark{}
	}
	return mark{inode: durable.Inode(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
