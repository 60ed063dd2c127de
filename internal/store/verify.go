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
}

// Verify checks the log's rules, that every projection on disk equals a
// fresh replay, and that the replay keeps every projection's invariants. It
// holds the lock, so no append lands between the replay and the comparison.
func (s *Store) Verify(ctx context.Context) (*VerifyReport, error) {
	unlock, err := s.Log.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	check, err := s.Log.Check()
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Events: check.Events, Files: check.Files, Problems: check.Problems,
		Differences: []projections.Difference{}, Stale: []string{}}
	if len(check.Problems) == 0 {
		diffs, stale, broken, err := s.Engine.Verify(ctx)
		if err != nil {
			return nil, err
		}
		rep.Differences = append(rep.Differences, diffs...)
		rep.Stale = append(rep.Stale, stale...)
		rep.Invariants = broken
	}
	rep.OK = len(rep.Problems) == 0 && len(rep.Differences) == 0 && len(rep.Invariants) == 0
	return rep, nil
}

// VerifySignatures is verify --signatures (sign.VerifyRepository): the
// history of tips (HEAD when none) and every event of the log.
func (s *Store) VerifySignatures(ctx context.Context, tips []string) (*sign.Report, error) {
	return sign.VerifyRepository(ctx, s.Repo.Root, s.Log, tips)
}
