package store

import (
	"context"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/projections"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	OK          bool                     `json:"ok"`
	Events      int                      `json:"events"`
	Files       int                      `json:"files"`
	Problems    []eventlog.Problem       `json:"problems"`
	Differences []projections.Difference `json:"differences"`
	Stale       []string                 `json:"stale"`
	Invariants  []string                 `json:"invariants,omitempty"` // "projection: rule" that a fresh replay breaks
	Signatures  *sign.Report             `json:"signatures,omitempty"` // verify --signatures
	// ClockBackwards are writers whose events' times go back (an event
	// dated before the one before it): reported, not a failure, since
	// files written before appends held a writer's times may hold some.
	ClockBackwards []eventlog.Backwards `json:"clock_backwards,omitempty"`
}

// Verify checks the log's rules, that every projection on disk equals a
// fresh replay, that the replay keeps every projection's invariants, and
// that the log holds every line the sync branch's history ever held of it
// (CheckHistory). It
// holds the lock, so no append lands between the replay and the comparison.
//
// The log is read once: the replay's reader holds every line to the rules
// eventlog.Check reports on, and stops at the first it breaks. Only then, or
// when the replay passed over what Check reports (a torn tail, an unfinished
// batch, a dropped copy of a line), is the log read again by Check, to list
// every problem.
func (s *Store) Verify(ctx context.Context) (*VerifyReport, error) {
	if err := s.Receive(ctx, true); err != nil {
		return nil, err
	}
	unlock, err := s.Log.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	v, verr := s.Engine.VerifyAll(ctx)
	if verr != nil || v.Unclean {
		check, err := s.Log.Check()
		if err != nil {
			return nil, err
		}
		if len(check.Problems) > 0 {
			return &VerifyReport{Events: check.Events, Files: check.Files, Problems: check.Problems,
				Differences: []projections.Difference{}, Stale: []string{}}, nil
		}
		if verr != nil {
			return nil, verr // not a broken rule of the log
		}
	}
	// The log keeps its rules; what the copies of the sync branch once held
	// must still be in it.
	lost, err := s.CheckHistory(ctx)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Events: v.Events, Files: v.Files, Problems: append([]eventlog.Problem{}, lost...),
		Differences: append([]projections.Difference{}, v.Differences...), Stale: append([]string{}, v.Stale...), Invariants: v.Broken}
	rep.OK = len(rep.Problems) == 0 && len(rep.Differences) == 0 && len(rep.Invariants) == 0
	if rep.ClockBackwards, err = s.Log.ClockBackwards(); err != nil {
		return nil, err
	}
	return rep, nil
}

// VerifySignatures is verify --signatures (sign.VerifyRepository): the
// history of tips (HEAD when none) and every event of the log.
func (s *Store) VerifySignatures(ctx context.Context, tips []string) (*sign.Report, error) {
	return sign.VerifyRepository(ctx, s.Repo.Root, s.Log, tips)
}
