package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// BranchCopies returns, by ref name, the commits of every copy of branch
// this clone has: the local branch, each remote's tracking branch
// (refs/remotes/<remote>/<branch>, which git fetch and git pull update)
// and spool's own tracking refs (refs/spool/sync/<remote>/<branch>). It
// reads git's ref files and runs nothing, so every command can afford it;
// a ref store it cannot read that way (reftable) is asked through git.
func BranchCopies(ctx context.Context, commonDir, branch string) (map[string]string, error) {
	if _, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil {
		return branchCopiesByGit(ctx, commonDir, branch)
	}
	refs := map[string]string{}
	if err := packedBranchCopies(commonDir, branch, refs); err != nil {
		return nil, err
	}
	names := []string{"refs/heads/" + branch}
	for _, ns := range []string{"refs/remotes", "refs/spool/sync"} {
		entries, err := os.ReadDir(filepath.Join(commonDir, filepath.FromSlash(ns)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, ns+"/"+e.Name()+"/"+branch)
			}
		}
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if id := strings.TrimSpace(string(b)); isCommitID(id) {
			refs[name] = id // a loose ref is newer than its packed copy
		}
	}
	return refs, nil
}

// packedBranchCopies adds the copies of branch that packed-refs holds.
func packedBranchCopies(commonDir, branch string, refs map[string]string) error {
	f, err := os.Open(filepath.Join(commonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		id, name, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if ok && isCommitID(string(id)) && isBranchCopy(string(name), branch) {
			refs[string(name)] = string(id)
		}
	}
	return sc.Err()
}

// isBranchCopy says whether ref is one of the refs BranchCopies returns.
func isBranchCopy(ref, branch string) bool {
	if ref == "refs/heads/"+branch {
		return true
	}
	for _, ns := range []string{"refs/remotes/", "refs/spool/sync/"} {
		if rest, ok := strings.CutPrefix(ref, ns); ok {
			remote, ok := strings.CutSuffix(rest, "/"+branch)
			return ok && remote != "" && !strings.Contains(remote, "/")
		}
	}
	return false
}

func branchCopiesByGit(ctx context.Context, commonDir, branch string) (map[string]string, error) {
	out, err := Run(ctx, commonDir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"+branch, "refs/remotes", "refs/spool/sync")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && isBranchCopy(name, branch) {
			refs[name] = id
		}
	}
	return refs, nil
}

// AllBranches returns the commit of every local and remote-tracking branch,
// by ref name.
func AllBranches(ctx context.Context, dir string) (map[string]string, error) {
	out, err := Run(ctx, dir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/remotes")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && isCommitID(id) {
			refs[name] = id
		}
	}
	return refs, nil
}

// IsAncestor says whether commit a is an ancestor of (or equal to) b.
func IsAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := Run(ctx, dir, "merge-base", "--is-ancestor", a, b)
	var gerr *GitError
	if errors.As(err, &gerr) && strings.TrimSpace(gerr.Stderr) == "" {
		return false, nil // exit 1: not an ancestor
	}
	return err == nil, err
}

// RefUpdate is one ref moved by UpdateRefs: to New, and only from Old
// when Old is set (ZeroID: only if the ref does not exist).
type RefUpdate struct {
	Ref, New, Old string
}

// ZeroID is the object id git reads as "no such ref".
const ZeroID = "0000000000000000000000000000000000000000"

// UpdateRefs moves refs in one transaction: all or none.
func UpdateRefs(ctx context.Context, dir, msg string, updates []RefUpdate) error {
	var in strings.Builder
	for _, u := range updates {
		in.WriteString("update " + u.Ref + " " + u.New)
		if u.Old != "" {
			in.WriteString(" " + u.Old)
		}
		in.WriteString("\n")
	}
	_, err := RunInput(ctx, dir, []byte(in.String()), "update-ref", "-m", msg, "--stdin")
	return err
}
