package sign

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"sync"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
)

// Problem is one event or commit that verify --signatures refuses.
type Problem struct {
	Code    string `json:"code"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	ID      string `json:"id,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Commit != "" {
		return fmt.Sprintf("commit %s: %s: %s", p.Commit, p.Code, p.Message)
	}
	if p.File != "" {
		return fmt.Sprintf("%s:%d: event %s by %q: %s: %s", p.File, p.Line, p.ID, p.Actor, p.Code, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Code, p.Message)
}

// Report is what verify --signatures found.
type Report struct {
	Events   int       `json:"events"`         // events read
	Signed   int       `json:"signed"`         // with a valid signature by a key allowed for their actor
	Exempt   int       `json:"exempt"`         // in the log already when allowed_signers was first committed
	Commits  int       `json:"commits"`        // commits that changed allowed_signers or an admins list, checked
	Root     string    `json:"root,omitempty"` // the commit that first brought allowed_signers (trusted on first use)
	Problems []Problem `json:"problems"`
}

// Err is the command's error when there are problems: signatures_invalid,
// with the count of each problem's code.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	counts := map[string]int{}
	for _, p := range r.Problems {
		counts[p.Code]++
	}
	return fault.New(CodeSignaturesInvalid, nil,
		fmt.Sprintf("verify --signatures failed: %d %s (%s)", len(r.Problems), map[bool]string{true: "problem", false: "problems"}[len(r.Problems) == 1], countsText(counts)), "counts", counts)
}

func countsText(counts map[string]int) string {
	codes := make([]string, 0, len(counts))
	for c := range counts {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	s := ""
	for i, c := range codes {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", counts[c], c)
	}
	return s
}

// VerifyEvents checks every event of the log: a signature in namespace
// spool over its content hash, by a key allowed lists for its actor at the
// event's time. Events exempt names are counted, not checked.
// Signatures are checked on every core.
func VerifyEvents(log *eventlog.Log, allowed *AllowedSigners, exempt Exemption, rep *Report) error {
	jobs := make(chan eventlog.Hashed, 256)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		fault.Go(func() {
			defer wg.Done()
			for h := range jobs {
				p := checkEvent(h, allowed)
				mu.Lock()
				if p != nil {
					rep.Problems = append(rep.Problems, *p)
				} else {
					rep.Signed++
				}
				mu.Unlock()
			}
		})
	}
	err := log.EachHashed(func(h eventlog.Hashed) error {
		rep.Events++
		if exempt.Has(h.Event) {
			rep.Exempt++
			return nil
		}
		jobs <- h
		return nil
	})
	close(jobs)
	wg.Wait()
	sort.SliceStable(rep.Problems, func(i, j int) bool {
		a, b := rep.Problems[i], rep.Problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return err
}

// checkEvent returns what is wrong with one event's signature, or nil.
func checkEvent(h eventlog.Hashed, allowed *AllowedSigners) *Problem {
	e := h.Event
	problem := func(code fault.Code, format string, args ...any) *Problem {
		return &Problem{Code: code.Name, File: h.Path, Line: h.Line, ID: e.ID, Actor: e.Actor, Message: fmt.Sprintf(format, args...)}
	}
	if e.Sig == "" {
		return problem(CodeUnsignedEvent, "no signature")
	}
	blob, err := base64.StdEncoding.DecodeString(e.Sig)
	if err != nil {
		return problem(CodeBadSignature, "sig is not base64")
	}
	key, err := Verify(blob, NamespaceEvents, EventMessage(h.Hash))
	if err != nil {
		return problem(CodeBadSignature, "%v", err)
	}
	if err := allowed.Check(e.Actor, NamespaceEvents, key, e.At); err != nil {
		return problem(CodeSignerNotAllowed, "%v", err)
	}
	return nil
}

// VerifyRepository is verify --signatures for the repository at root (its
// primary worktree) and its log: the history of tips (HEAD when none) and
// the work tree must change the allowed signers and admins only with an
// admin's signature, and every event must be signed by a key allowed for
// its actor, but those the log had when allowed_signers was first committed.
func VerifyRepository(ctx context.Context, root string, log *eventlog.Log, tips []string) (*Report, error) {
	rep := &Report{Problems: []Problem{}}
	allowed, err := LoadAllowedSigners(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fault.New(CodeAllowedSignersInvalid, err,
			fmt.Sprintf("verify --signatures needs %s: one line per key, the actors it signs for first (see ssh-keygen(1), ALLOWED SIGNERS)", AllowedSignersFile), "file", AllowedSignersFile)
	}
	if err != nil {
		return nil, err
	}
	var exempt Exemption
	err = git.ReadHistory(ctx, root, func(h *git.History) error {
		head, err := h.Resolve("HEAD")
		if errors.Is(err, git.ErrRefNotFound) {
			return nil // nothing committed yet
		}
		if err != nil {
			return err
		}
		t := newTrust(h) // one for root, checkHistory and checkWorkTree: they read the states of the same commits
		if rep.Root, err = t.root(head); err != nil {
			return err
		}
		if rep.Root != "" {
			if exempt, err = Exempt(h, rep.Root); err != nil {
				return err
			}
		}
		if len(tips) == 0 {
			tips = []string{head}
		}
		if err := t.checkHistory(tips, rep); err != nil {
			return err
		}
		return t.checkWorkTree(head, root, rep)
	})
	if err != nil {
		return nil, historyError(err)
	}
	if err := VerifyEvents(log, allowed, exempt, rep); err != nil {
		return nil, err
	}
	return rep, nil
}
