package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/workqueue"
)

// PRDResult is what applying PRD section updates did.
type PRDResult struct {
	plans.Outcome
	Hash     string   `json:"hash"`
	File     string   `json:"file"`
	Sections []string `json:"sections"`
	Commit   string   `json:"commit,omitempty"`
}

// ApplyUpdates writes PRD section updates into prd.json and commits that
// file alone (or holds them for approval), once.
func (s *Service) ApplyUpdates(ctx context.Context, data []byte) (PRDResult, error) {
	p, err := plans.ParsePRD(data)
	if err != nil {
		return PRDResult{}, err
	}
	return s.applyPRD(ctx, p, "", "", nil)
}

// applyPRD applies updates: HIL first (a held proposal is all the first
// append records), then the file written and committed, then the
// plan.prd_updated event. The file carries the proposal's hash, so a
// command that died before recording finds its work done and records it.
// then adds the caller's events (a build's outcome) to whichever append
// ends the work; approving names the held proposal this applies.
func (s *Service) applyPRD(ctx context.Context, p plans.PRDProposal, planID, approving string, then func(PRDResult) []eventlog.Draft) (PRDResult, error) {
	if then == nil {
		then = func(PRDResult) []eventlog.Draft { return nil }
	}
	unlock, ok, err := s.Store.Mutex(ctx, "prd-file", s.wq.Core.LockTimeout)
	if err != nil {
		return PRDResult{}, err
	}
	if !ok {
		return PRDResult{}, fmt.Errorf("another spool command is writing %s (%s): %w", s.prdFile, s.Store.MutexPath("prd-file"), eventlog.ErrLockTimeout)
	}
	defer unlock()
	c, err := s.context(approving)
	if err != nil {
		return PRDResult{}, err
	}
	hash := plans.Hash(p)
	start := PRDResult{Hash: hash, File: s.prdFile, Sections: p.Names()}
	// step is what one append decided: the result so far, and whether it
	// ends the work.
	type step struct {
		res  PRDResult
		done bool
	}
	// recorded ends the work when the updates were recorded before.
	recorded := func(st *plans.State, res PRDResult) ([]eventlog.Draft, step, bool, error) {
		u := st.PRDUpdates[hash]
		if u == nil {
			return nil, step{}, false, nil
		}
		res.Existing, res.Commit = true, u.Commit
		drafts, err := approval(st, approving)
		return append(drafts, then(res)...), step{res, true}, true, err
	}
	_, first, err := decideWith(ctx, s, []string{plans.Name}, func(st *plans.State, _ *workqueue.State) ([]eventlog.Draft, step, error) {
		if drafts, r, ok, err := recorded(st, start); ok {
			return drafts, r, err
		}
		if approving != "" {
			if _, _, err := plans.Approve(st, approving); err != nil {
				return nil, step{}, err
			}
		}
		drafts, out, held, err := c.Hold(st, plans.KindPRD, plans.PRDCategories(p), hash, "", planID, p)
		res := start
		res.Outcome = out
		if !held || err != nil {
			return nil, step{res, held}, err
		}
		return append(drafts, then(res)...), step{res, true}, nil
	})
	res := first.res
	if err != nil || first.done {
		return res, err
	}
	if res.Commit, err = s.commitPRD(ctx, p, hash); err != nil {
		return res, err
	}
	_, last, err := decideWith(ctx, s, []string{plans.Name}, func(st *plans.State, _ *workqueue.State) ([]eventlog.Draft, step, error) {
		if drafts, r, ok, err := recorded(st, res); ok {
			return drafts, r, err
		}
		drafts, err := approval(st, approving)
		d := plans.PRDUpdated(plans.PRDUpdatedData{Hash: hash, File: s.prdFile, Sections: res.Sections, Commit: res.Commit,
			PlanID: planID, Proposal: approving, Notify: res.Notify})
		return append(append([]eventlog.Draft{d}, drafts...), then(res)...), step{res, true}, err
	})
	if err != nil {
		return res, err
	}
	return last.res, nil
}

// prdPath is where orchestrator.prd_file is once links are resolved, in
// the work tree (durable.Within): a committed link (prd.json ->
// ~/.docker/config.json, docs -> ~) would otherwise have spool write there,
// or hand what it reads to the planner. One that leads outside, into .git
// or nowhere is invalid_prd_file.
func (s *Service) prdPath() (string, error) {
	dir := s.Store.Repo.WorkTree
	path, err := durable.Within(dir, filepath.Join(dir, filepath.FromSlash(s.prdFile)))
	if errors.Is(err, durable.ErrOutside) {
		return "", fault.New(plans.CodeInvalidPRDFile, err, fmt.Sprintf("%s: %v; spool reads and writes it only inside the work tree", s.prdFile, err), "file", s.prdFile)
	}
	if err != nil {
		return "", fault.New(fault.CodeStorage, err, "cannot read "+s.prdFile+": "+err.Error(), "file", s.prdFile)
	}
	return path, nil
}

// approval is the approval event of the proposal being applied, if any.
func approval(st *plans.State, approving string) ([]eventlog.Draft, error) {
	if approving == "" {
		return nil, nil
	}
	d, _, err := plans.Approve(st, approving)
	return []eventlog.Draft{d}, err
}

// commitPRD writes the updates into prd.json, unless the file has them
// already, and commits that file alone: whatever else is staged stays
// staged. It returns the last commit of the file.
func (s *Service) commitPRD(ctx context.Context, p plans.PRDProposal, hash string) (string, error) {
	dir := s.Store.Repo.WorkTree
	path, err := s.prdPath()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fault.New(fault.CodeStorage, err, "cannot read "+s.prdFile+": "+err.Error(), "file", s.prdFile)
	}
	f, err := plans.ParsePRDFile(data)
	if err != nil {
		return "", fault.New(plans.CodeInvalidPRDFile, err, s.prdFile+": "+err.Error(), "file", s.prdFile)
	}
	if f.LastUpdate != hash {
		f.Apply(p, hash, s.Now)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fault.New(fault.CodeStorage, err, "cannot write "+s.prdFile+": "+err.Error(), "file", s.prdFile)
		}
		if err := durable.WriteWorkTreeFile(path, f.Marshal(), 0o644); err != nil {
			return "", fault.New(fault.CodeStorage, err, "cannot write "+s.prdFile+": "+err.Error(), "file", s.prdFile)
		}
	}
	if _, err := git.Run(ctx, dir, "add", "--", s.prdFile); err != nil {
		return "", err
	}
	status, err := git.Run(ctx, dir, "status", "--porcelain", "--", s.prdFile)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(status) != "" {
		msg := fmt.Sprintf("spool: update PRD sections %s\n\nProposal %s.", strings.Join(p.Names(), ", "), hash[:12])
		if _, err := git.Run(ctx, dir, "commit", "--quiet", "--only", "-m", msg, "--", s.prdFile); err != nil {
			return "", err
		}
	}
	commit, err := git.Run(ctx, dir, "log", "-1", "--format=%H", "--", s.prdFile)
	return strings.TrimSpace(commit), err
}
