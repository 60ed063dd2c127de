package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// ErrRefNotFound is a ref that does not exist (Contains and RevParse wrap it).
var ErrRefNotFound = plumbing.ErrReferenceNotFound

// Reads of repository state go through go-git, in process: a ref's commit,
// the ancestry check, a commit's Change-Id trailer. Everything that writes
// (rebase, worktree add/remove, update-ref, push, read-tree) and git status
// stay with the git binary (git.go).

// gitRepo is what a read needs from the repository containing a directory:
// its refs as that worktree sees them (its own HEAD, the shared refs) and
// the object database all worktrees share.
type gitRepo struct {
	refs *filesystem.Storage
	db   *objectDB
}

// objectDB is a repository's object database, kept for the life of the
// process: go-git reads a pack's whole .idx into memory before it finds
// anything in it (about 25 ms for 300,000 objects, where git maps the file
// and bisects it), so the train, which reads the same repository for hours,
// pays that once rather than on every read.
type objectDB struct {
	mu sync.Mutex // go-git's storage is not safe for concurrent use
	s  *filesystem.Storage
}

var objectDBs struct {
	sync.Mutex
	byDir map[string]*objectDB // by common dir
}

func objectDBAt(commonDir string) *objectDB {
	objectDBs.Lock()
	defer objectDBs.Unlock()
	if db := objectDBs.byDir[commonDir]; db != nil {
		return db
	}
	if objectDBs.byDir == nil || len(objectDBs.byDir) >= 16 {
		objectDBs.byDir = map[string]*objectDB{}
	}
	// A small object cache: reads touch a few commits (an ancestry walk
	// more, once), and the default of 96 MiB would stay with the train.
	// A large object (a writer file of the log's branch: 290 MB for a
	// million events) is read from its file when asked, not copied whole
	// into a buffer grown by doubling first.
	db := &objectDB{s: filesystem.NewStorageWithOptions(osfs.New(commonDir), cache.NewObjectLRU(8*cache.MiByte),
		filesystem.Options{LargeObjectThreshold: 1 << 20})}
	objectDBs.byDir[commonDir] = db
	return db
}

// read runs f with the object database locked; when an object is missing,
// or is in a pack that is gone, it looks again after rereading the list of
// packs, which git may have changed (gc, repack) since they were loaded,
// and after storing the empty tree (storeEmptyTree).
func (db *objectDB) read(f func(s *filesystem.Storage) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	err := f(db.s)
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound) {
		db.s.Reindex()
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			storeEmptyTree(db.s)
		}
		err = f(db.s)
	}
	return err
}

// EmptyTree is git's empty tree.
const EmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// storeEmptyTree stores the empty tree when the repository lacks it. git
// takes it for present in every repository, stored or not (cat-file,
// rev-list, mktree and commit-tree accept it; only fsck says "missing
// tree"), so a repository may hold a history that references it without
// it: a fetch killed after writing the rest of a history's objects is not
// fetched again, git's check finding nothing missing. go-git reads only
// what is stored.
func storeEmptyTree(s *filesystem.Storage) {
	if s.HasEncodedObject(plumbing.NewHash(EmptyTree)) == nil {
		return
	}
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.TreeObject)
	s.SetEncodedObject(obj) // failing, the read fails as it would have
}

// openRepo finds the repository containing dir as git.PlainOpenWithOptions
// does with DetectDotGit and EnableDotGitCommonDir: the nearest .git
// directory, or .git file ("gitdir: ...") of a linked worktree, whose
// commondir holds the shared refs and objects while HEAD stays the
// worktree's own.
//
// It is not git.PlainOpenWithOptions itself: importing the go-git root
// package links its transports (net/http, ssh, ...) into spool, which
// grows the binary from 8 to 19 MB (13 MB without them) and adds about
// 0.5 ms of start-up to every command, merge list included, for code spool
// never calls; and a Repository cannot share one object database between
// worktrees (see objectDB).
func openRepo(dir string) (*gitRepo, error) {
	path, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for {
		fi, err := os.Stat(filepath.Join(path, ".git"))
		if err == nil {
			dot := filepath.Join(path, ".git")
			if !fi.IsDir() {
				if dot, err = gitDirOfFile(path); err != nil {
					return nil, err
				}
			}
			return repoAt(dot)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		parent := filepath.Dir(path)
		if parent == path {
			return nil, fmt.Errorf("%s: not in a git repository", dir)
		}
		path = parent
	}
}

// gitDirOfFile reads the git dir a .git file ("gitdir: PATH") points at.
func gitDirOfFile(worktree string) (string, error) {
	b, err := os.ReadFile(filepath.Join(worktree, ".git"))
	if err != nil {
		return "", err
	}
	line, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", errors.New(filepath.Join(worktree, ".git") + " has no gitdir: line")
	}
	line, _, _ = strings.Cut(line, "\n")
	gitdir := strings.TrimSpace(line)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(worktree, gitdir)
	}
	return gitdir, nil
}

// repoAt opens the git dir dot, with refs and objects read from its
// commondir when it has one (a linked worktree's git dir).
func repoAt(dot string) (*gitRepo, error) {
	if _, err := os.Stat(filepath.Join(dot, "HEAD")); err != nil {
		return nil, fmt.Errorf("%s: not a git directory (no HEAD)", dot)
	}
	commonDir := dot
	var common billy.Filesystem
	if b, err := os.ReadFile(filepath.Join(dot, "commondir")); err == nil && len(b) > 0 {
		commonDir = strings.TrimSpace(string(b))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(dot, commonDir)
		}
		if _, err := os.Stat(commonDir); err != nil {
			return nil, fmt.Errorf("commondir %s: %w", commonDir, err)
		}
		common = osfs.New(commonDir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	refs := filesystem.NewStorage(dotgit.NewRepositoryFilesystem(osfs.New(dot), common), cache.NewObjectLRU(0))
	return &gitRepo{refs: refs, db: objectDBAt(filepath.Clean(commonDir))}, nil
}

// commitAt resolves rev to the commit it names, peeling annotated tags, as
// `git rev-parse --verify rev^{commit}` does. rev is HEAD, a full ref name
// (refs/...) or a full commit id: the only forms the train asks about.
// Call it inside r.db.read.
func (r *gitRepo) commitAt(s *filesystem.Storage, rev string) (*object.Commit, error) {
	var h plumbing.Hash
	switch {
	case rev == "HEAD" || strings.HasPrefix(rev, "refs/"):
		ref, err := storer.ResolveReference(r.refs, plumbing.ReferenceName(rev))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rev, err)
		}
		h = ref.Hash()
	case isCommitID(rev):
		h = plumbing.NewHash(rev)
	default:
		return nil, fmt.Errorf("%s: not HEAD, a full ref name or a full commit id", rev)
	}
	for range 32 { // a tag of a tag of ...; git gives up on cycles too
		obj, err := object.GetObject(s, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rev, err)
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o, nil
		case *object.Tag:
			h = o.Target
		default:
			return nil, fmt.Errorf("%s: %s is a %s, not a commit", rev, h, obj.Type())
		}
	}
	return nil, fmt.Errorf("%s: too many nested tags", rev)
}

func isCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// RevParse resolves a ref to a commit id.
func RevParse(ctx context.Context, dir, ref string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r, err := openRepo(dir)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", dir, err)
	}
	var sha string
	err = r.db.read(func(s *filesystem.Storage) error {
		c, err := r.commitAt(s, ref)
		if err == nil {
			sha = c.Hash.String()
		}
		return err
	})
	return sha, err
}

// Contains reports whether commit is an ancestor of (or equal to) ref.
//
// go-git walks the history from ref until it meets commit, so "no" costs a
// walk of all of ref's history (git stops at the merge base). Recovery asks
// only about entries whose runner died while merging, where the answer is
// usually "yes, at the tip".
func Contains(ctx context.Context, dir, ref, commit string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	r, err := openRepo(dir)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", dir, err)
	}
	var ok bool
	err = r.db.read(func(s *filesystem.Storage) error {
		tip, err := r.commitAt(s, ref)
		if err != nil {
			return err
		}
		c, err := r.commitAt(s, commit)
		if err != nil {
			return err
		}
		ok, err = c.IsAncestor(tip)
		return err
	})
	return ok, err
}

// ReadChangeID reads the commit at rev in the worktree at dir and the
// values of its Change-Id trailers, in order.
func ReadChangeID(ctx context.Context, dir, rev string) (head string, values []string, err error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	r, err := openRepo(dir)
	if err != nil {
		return "", nil, fmt.Errorf("open %s: %w", dir, err)
	}
	err = r.db.read(func(s *filesystem.Storage) error {
		c, err := r.commitAt(s, rev)
		if err == nil {
			head, values = c.Hash.String(), trailerValues(c.Message, "Change-Id")
		}
		return err
	})
	return head, values, err
}

// trailerValues returns the values of the trailers named key (ASCII case
// insensitive) in a commit message, in order, exactly as
// `git log --format=%(trailers:key=KEY,valueonly)` finds them with git's
// default settings: ':' separates, '#' starts a comment, no trailer.*
// configuration. It is a port of git's trailer.c (find_trailer_start,
// trailer_info_get, format_trailer_info), kept byte for byte; a
// differential test holds it to the git binary.
func trailerValues(msg, key string) []string {
	if i := strings.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i] // git reads the message as a C string
	}
	msg = skipBlankLines(msg) // git looks from the subject on
	end := len(msg) - ignoredLogMessageBytes(msg)
	start := trailerBlockStart(msg, end)
	var trailers []string
	last := -1 // the trailer continuation lines join, or -1
	for _, line := range splitLinesKeep(msg[start:end]) {
		if last >= 0 && isGitSpace(line[0]) {
			trailers[last] += line
			continue
		}
		trailers = append(trailers, line)
		last = -1
		if findSeparator(line) >= 1 {
			last = len(trailers) - 1
		}
	}
	var values []string
	for _, t := range trailers {
		sep := findSeparator(t)
		if sep < 1 {
			continue
		}
		if tok := trimGitSpace(t[:sep]); asciiEqualFold(tok, key) {
			values = append(values, trimGitSpace(t[sep+1:]))
		}
	}
	return values
}

// skipBlankLines drops the blank lines before the subject (pretty.c's
// skip_blank_lines: a line of git spaces only is blank).
func skipBlankLines(msg string) string {
	for msg != "" {
		n := nextLine(msg, 0)
		if strings.TrimRight(msg[:n], " \t\n\r") != "" {
			break
		}
		msg = msg[n:]
	}
	return msg
}

// gitGeneratedPrefixes are the trailers git itself writes; one of them
// makes a paragraph a trailer block at 25% trailers.
var gitGeneratedPrefixes = []string{"Signed-off-by: ", "(cherry picked from commit "}

// trailerBlockStart is git's find_trailer_start: the start of the last
// paragraph (after the title) if it is made of trailers, else end. A block
// is trailers if all its lines are trailers (or their continuation lines),
// or it has a git-generated trailer and at least 25% trailer lines.
func trailerBlockStart(buf string, end int) int {
	// The first paragraph is the title and cannot be trailers.
	endOfTitle := 0
	for endOfTitle < end {
		line := buf[endOfTitle:]
		if !strings.HasPrefix(line, "#") && isBlankLine(line) {
			break
		}
		endOfTitle = nextLine(buf, endOfTitle)
	}
	onlySpaces, recognizedPrefix := true, false
	trailerLines, nonTrailerLines, possibleContinuationLines := 0, 0, 0
outer:
	for l := lastLine(buf, end); l >= endOfTitle; l = lastLine(buf, l) {
		line := buf[l:]
		if strings.HasPrefix(line, "#") {
			nonTrailerLines += possibleContinuationLines
			possibleContinuationLines = 0
			continue
		}
		if isBlankLine(line) {
			if onlySpaces {
				continue
			}
			nonTrailerLines += possibleContinuationLines
			if recognizedPrefix && trailerLines*3 >= nonTrailerLines {
				return nextLine(buf, l)
			} else if trailerLines > 0 && nonTrailerLines == 0 {
				return nextLine(buf, l)
			}
			return end
		}
		onlySpaces = false
		for _, p := range gitGeneratedPrefixes {
			if strings.HasPrefix(line, p) {
				trailerLines++
				possibleContinuationLines = 0
				recognizedPrefix = true
				continue outer
			}
		}
		switch {
		case findSeparator(line) >= 1 && !isGitSpace(line[0]):
			trailerLines++
			possibleContinuationLines = 0
		case isGitSpace(line[0]):
			possibleContinuationLines++
		default:
			nonTrailerLines++
			nonTrailerLines += possibleContinuationLines
			possibleContinuationLines = 0
		}
	}
	return end
}

// findSeparator is the index of the ':' ending a trailer's token (letters,
// digits and '-', then optional blanks), or -1.
func findSeparator(line string) int {
	whitespaceFound := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ':':
			return i
		case !whitespaceFound && (isASCIIAlnum(c) || c == '-'):
		case i != 0 && (c == ' ' || c == '\t'):
			whitespaceFound = true
		default:
			return -1
		}
	}
	return -1
}

// ignoredLogMessageBytes is git's ignore_non_trailer: the length of the
// message's tail that is comments, blank lines, an old "Conflicts:" block
// or everything from a scissors line on.
func ignoredLogMessageBytes(buf string) int {
	n := len(buf)
	cutoff := n
	const scissors = "\n# ------------------------ >8 ------------------------"
	if strings.HasPrefix(buf, scissors[1:]) {
		cutoff = 0
	} else if i := strings.Index(buf, scissors); i >= 0 && i+1 < cutoff {
		cutoff = i + 1
	}
	boc, bol := 0, 0
	inConflicts := false
	for bol < cutoff {
		next := cutoff
		if i := strings.IndexByte(buf[bol:cutoff], '\n'); i >= 0 {
			next = bol + i + 1
		}
		switch {
		case buf[bol] == '#' || buf[bol] == '\n':
			if boc == 0 {
				boc = bol
			}
		case strings.HasPrefix(buf[bol:], "Conflicts:\n"):
			inConflicts = true
			if boc == 0 {
				boc = bol
			}
		case inConflicts && buf[bol] == '\t':
		case boc != 0:
			boc = 0
			inConflicts = false
		}
		bol = next
	}
	if boc != 0 {
		return n - boc
	}
	return n - cutoff
}

// lastLine is the start of the line before position end (git's last_line).
func lastLine(buf string, end int) int {
	switch end {
	case 0:
		return -1
	case 1:
		return 0
	}
	// The character just before end is the previous line's newline.
	if i := strings.LastIndexByte(buf[:end-1], '\n'); i >= 0 {
		return i + 1
	}
	return 0
}

// nextLine is the start of the line after the one at i.
func nextLine(buf string, i int) int {
	if j := strings.IndexByte(buf[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(buf)
}

func isBlankLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return true
		}
		if !isGitSpace(s[i]) {
			return false
		}
	}
	return true
}

// splitLinesKeep splits s after each newline, keeping it (strbuf_split).
func splitLinesKeep(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		lines = append(lines, s[:i])
		s = s[i:]
	}
	return lines
}

// isGitSpace is git's isspace: ASCII space, tab, newline and carriage return.
func isGitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimGitSpace(s string) string { return strings.Trim(s, " \t\n\r") }

func isASCIIAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
