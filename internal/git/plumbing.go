package git

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Plumbing for spool sync: objects and refs of a branch nobody checks out,
// written without the work tree, the index or HEAD.

// unreachable says whether git's stderr means the remote could not be
// reached (rather than refusing what was asked).
func unreachable(stderr string) bool {
	for _, sign := range []string{"Could not read from remote", "unable to access", "does not appear to be a git repository",
		"Connection refused", "Could not resolve host", "Connection timed out", "No such file or directory", "unable to connect"} {
		if strings.Contains(stderr, sign) {
			return true
		}
	}
	return false
}

func stderrOf(err error) string {
	var gerr *GitError
	if errors.As(err, &gerr) {
		if msg := strings.TrimSpace(gerr.Stderr); msg != "" {
			return msg
		}
		return gerr.Err.Error() // killed, or an exit with nothing said
	}
	return err.Error()
}

// RemoteInConfig says whether the repository's own config file names
// remote, read in process: what git remote get-url finds in the common
// case. A remote it does not find may still be in a worktree's config or
// an included file, where only git looks (RemoteExists asks it).
func RemoteInConfig(dir, remote string) bool {
	r, err := openRepo(dir)
	if err != nil {
		return false
	}
	cfg, err := r.refs.Config()
	return err == nil && len(cfg.Raw.Section("remote").Subsection(remote).Options) > 0
}

// RemoteTip is the commit the remote's branch points at; "" when the
// remote has no such branch. An unreachable remote is a *PushError with
// Unreachable set.
func RemoteTip(ctx context.Context, dir, remote, branch string) (string, error) {
	refs, err := RemoteRefs(ctx, dir, remote, "refs/heads/"+branch)
	return refs["refs/heads/"+branch], err
}

// RemoteRefs lists the remote's refs that match patterns (ls-remote's:
// globs matched against a ref's tail), ref to object, in one round trip.
// An unreachable remote is a *PushError with Unreachable set.
func RemoteRefs(ctx context.Context, dir, remote string, patterns ...string) (map[string]string, error) {
	out, err := Run(ctx, dir, append([]string{"ls-remote", remote}, patterns...)...)
	if err != nil {
		msg := stderrOf(err)
		return nil, &PushError{Remote: remote, Unreachable: true, Message: msg}
	}
	refs := make(map[string]string)
	for line := range strings.Lines(out) {
		sha, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok {
			refs[ref] = sha
		}
	}
	return refs, nil
}

// FetchRef fetches the remote's branch into ref (forced: ref is spool's
// copy of what the remote has), and into nothing else: --refmap= keeps git
// from updating the remote-tracking branch too (refs/remotes/…), which is
// the user's, and whose lock a killed git may have left.
func FetchRef(ctx context.Context, dir, remote, branch, ref string) error {
	spec := "+refs/heads/" + branch
	if ref != "" {
		spec += ":" + ref
	}
	_, err := Run(ctx, dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=", remote, spec)
	if err != nil {
		msg := stderrOf(err)
		return &PushError{Remote: remote, Unreachable: unreachable(msg), Message: msg}
	}
	return nil
}

// CommitTree makes a commit of tree on parent ("" for none) with the
// committer git would use, or spool's own when none is configured.
func CommitTree(ctx context.Context, repo, tree, parent, msg string) (string, error) {
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	return CommitTreeOn(ctx, repo, tree, msg, parents...)
}

// CommitTreeOn is CommitTree with any number of parents (two: a merge).
func CommitTreeOn(ctx context.Context, repo, tree, msg string, parents ...string) (string, error) {
	args := []string{"-c", "user.useConfigOnly=false", "commit-tree", tree, "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := Run(ctx, repo, args...)
	if err != nil && strings.Contains(stderrOf(err), "tell me who you are") {
		args = append([]string{"-c", "user.name=spool", "-c", "user.email=spool@localhost"}, args...)
		out, err = Run(ctx, repo, args...)
	}
	return strings.TrimSpace(out), err
}

// standIn is the name of the remote spool pushes through (pushVia), or
// the first of standIn-1, standIn-2, … that names no remote of the user's.
const standIn = "spool-push"

// pushVia returns git's options and the remote to name so that a push
// leaves the remote-tracking refs (refs/remotes/<remote>/…) alone. Pushed
// by its name, git moves them too, and a git fetch the user runs at that
// moment fails to lock the ref it expected to find unchanged: spool, which
// pushes its branch from hooks and watch mode, would break the user's git.
// The push goes instead through a stand-in remote with every setting of
// remote but the ones that map refs (fetch, push, mirror), so pushurl,
// receivepack, proxy and the rest still apply. A remote git's config does
// not name (a path or a URL, or one of .git/remotes/) is pushed to by what
// it is: a path or a URL has no tracking refs.
func pushVia(ctx context.Context, dir, remote string) ([]string, string, error) {
	out, err := Run(ctx, dir, "config", "--null", "--get-regexp", `^remote\.`)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil, remote, nil // no remotes in config
	}
	if err != nil {
		return nil, "", err
	}
	var settings []string      // name=value, or a name alone
	taken := map[string]bool{} // the names of the user's remotes
	named := false
	for _, entry := range strings.Split(out, "\x00") {
		key, value, hasValue := strings.Cut(entry, "\n")
		rest, ok := strings.CutPrefix(key, "remote.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 {
			continue
		}
		taken[rest[:i]] = true
		if rest[:i] != remote {
			continue
		}
		switch name := rest[i+1:]; name {
		case "fetch", "push", "mirror":
		default:
			named = named || name == "url"
			setting := name // alone: a boolean set true, as git reads it
			if hasValue {
				setting += "=" + value
			}
			settings = append(settings, setting)
		}
	}
	if !named {
		return nil, remote, nil
	}
	via := standIn
	for n := 1; taken[via]; n++ {
		via = fmt.Sprintf("%s-%d", standIn, n)
	}
	opts := make([]string, 0, 2*len(settings))
	for _, s := range settings {
		opts = append(opts, "-c", "remote."+via+"."+s)
	}
	return opts, via, nil
}

// PushCommit pushes commit to the remote's branch, never forced: a branch
// that moved since is refused (Rejected), and the caller fetches again.
// Without deltas git does not look for any (pack.window=0): for a push of
// many new objects that have none worth the search. The refspecs of also
// go in the same push, atomically: none lands unless the branch moves (a
// remote that cannot push atomically has them pushed after it).
func PushCommit(ctx context.Context, repo, remote, commit, branch string, deltas bool, also ...string) error {
	specs := append([]string{commit + ":refs/heads/" + branch}, also...)
	var opts []string
	if !deltas {
		opts = append(opts, "-c", "pack.window=0")
	}
	atomic := len(also) > 0
	err := pushSpecs(ctx, repo, remote, opts, atomic, specs)
	var perr *PushError
	if atomic && errors.As(err, &perr) && !perr.Unreachable && !branchMoved(perr.Message) {
		// The remote cannot push atomically, or refused one of also: the
		// branch alone, then the others.
		if err = pushSpecs(ctx, repo, remote, opts, false, specs[:1]); err == nil {
			PushSpecs(ctx, repo, remote, also...)
		}
	}
	return err
}

// branchMoved says whether git's stderr refuses a push because the branch
// moved since it was fetched, or as it was pushed (a ref another push
// held locked).
func branchMoved(stderr string) bool {
	for _, sign := range []string{"non-fast-forward", "fetch first", "stale info", "cannot lock ref", "failed to update ref"} {
		if strings.Contains(stderr, sign) {
			return true
		}
	}
	return false
}

// PushSpecs pushes refspecs, each on its own (not atomically), never
// forced; a refspec ":ref" deletes ref.
func PushSpecs(ctx context.Context, repo, remote string, specs ...string) error {
	return pushSpecs(ctx, repo, remote, nil, false, specs)
}

func pushSpecs(ctx context.Context, repo, remote string, opts []string, atomic bool, specs []string) error {
	via, name, err := pushVia(ctx, repo, remote)
	if err != nil {
		return err
	}
	args := slices.Concat(opts, via, []string{"push", "--quiet", "--no-verify"})
	if atomic {
		args = append(args, "--atomic")
	}
	_, err = Run(ctx, repo, append(append(args, name), specs...)...)
	if err == nil {
		return nil
	}
	msg := stderrOf(err)
	perr := &PushError{Remote: remote, Message: msg, Unreachable: unreachable(msg)}
	for _, sign := range []string{"[rejected]", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref", "stale info"} {
		perr.Rejected = perr.Rejected || strings.Contains(msg, sign)
	}
	return perr
}

// PushRef pushes the local ref to the same ref on remote, never forced,
// for the merge train: the push dies with spool (RunTied). A remote whose
// ref moved since (another clone pushed) refuses it: Rejected. A lock
// file in the way, here or on the remote, is Lock.
func PushRef(ctx context.Context, repo, remote, ref string) error {
	_, err := RunTied(ctx, repo, "push", "--quiet", remote, ref+":"+ref)
	if err == nil {
		return nil
	}
	msg := stderrOf(err)
	perr := &PushError{Remote: remote, Message: msg, Unreachable: unreachable(msg), Lock: LockFile(err)}
	for _, sign := range []string{"[rejected]", "non-fast-forward", "fetch first", "stale info"} {
		perr.Rejected = perr.Rejected || strings.Contains(msg, sign)
	}
	return perr
}
