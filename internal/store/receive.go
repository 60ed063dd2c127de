package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/refname"
)

// The log belongs to the repository, not to a branch: this clone's copy
// lives in .git/spool/events, which no checkout, stash, reset, rebase or
// clean touches and every worktree shares. What is committed and shared is
// the sync branch (sync.branch, "spool-log"): a branch nobody checks out whose
// tree is events/<writer>.jsonl, written by spool sync and claims through
// the remote. Events arrive from the copies of that branch a clone has
// (its own, and each remote's as git fetch or git pull left it), and, from
// repositories of the old layout, from .spool/events in a work tree or on
// any branch. Every command brings in what changed there before it reads.

// DefaultSyncBranch is sync.branch's default.
const DefaultSyncBranch = "spool-log"

// SyncBranchDir is where the sync branch's tree keeps the writer files.
const SyncBranchDir = "events"

// LegacyEventsDir is where the log lived in the work tree before it moved
// under .git: read, never written.
func LegacyEventsDir(worktree string) string { return filepath.Join(worktree, ".spool", "events") }

// copyOf is a copy of writer files that may hold events this log lacks.
type copyOf struct {
	source string            // a ref or a directory, for messages
	key    string            // what received.json remembers it by
	ident  string            // its identity now: a commit, or a file's inode, size and time
	files  map[string]string // name → blob id (refs) or path (directories)
	commit string            // the commit files come from ("": a directory)
}

// received is what this clone has brought in, by copy, so that a copy that
// has not changed costs a comparison (.git/spool/received.json).
type received struct {
	Copies map[string]string `json:"copies"` // key → identity when last received
	Blobs  map[string]string `json:"blobs"`  // writer file → the blob last received for it
	// Files are, by writer file, the blob last read for it: spool status
	// compares the remote's events with the log's, and a sync the local
	// files with the remote's, and in a fresh clone they read its blobs or
	// files again to count and hash them (a second, and 590 MiB, at a
	// million events).
	Files map[string]ReceivedFile `json:"files,omitempty"`
}

// ReceivedFile is the blob a writer file was last received from: its lines
// (newlines), and, when the file began with it then (was taken whole from
// it, or already held it), the file's inode, the blob's size, the file's
// modification time and the sum of its bytes before that size, by which a
// sync knows the file still is that blob (the same size and time) or has
// only grown from it (the same inode and sum, no smaller) without reading
// it.
type ReceivedFile struct {
	Blob  string `json:"blob"`
	Lines int    `json:"lines"`
	Inode uint64 `json:"inode,omitempty"`
	Size  int64  `json:"size,omitempty"`
	MTime int64  `json:"mtime,omitempty"`
	Tail  string `json:"tail,omitempty"` // TailSum of the file before Size
}

// ReceivedFiles is, by writer file name, the blob each was last received
// from, as received.json has it (read afresh: a receive may be changing
// the store's copy).
func (s *Store) ReceivedFiles() map[string]ReceivedFile {
	var rc received
	if b, err := os.ReadFile(s.receivedPath()); err == nil {
		json.Unmarshal(b, &rc) // damaged: the blobs are read again
	}
	return rc.Files
}

func (s *Store) receivedPath() string { return filepath.Join(s.Repo.PrivateDir(), "received.json") }

func (s *Store) loadReceived() *received {
	if s.received != nil {
		return s.received
	}
	rc := &received{}
	if b, err := os.ReadFile(s.receivedPath()); err == nil {
		json.Unmarshal(b, rc) // a damaged file costs one more look at every copy
	}
	if rc.Copies == nil {
		rc.Copies = map[string]string{}
	}
	if rc.Blobs == nil {
		rc.Blobs = map[string]string{}
	}
	if rc.Files == nil {
		rc.Files = map[string]ReceivedFile{}
	}
	s.received = rc
	return rc
}

// changedCopies lists the copies that changed since they were last
// received; all of them, and every branch's .spool/events, when this clone
// has no log yet (a fresh clone, or the first command after the move).
func (s *Store) changedCopies(ctx context.Context) (out []copyOf, first bool, err error) {
	// received.json is written once a receive went through: until then
	// (a fresh clone, the first command after the move, or one that
	// failed) every copy is looked at.
	if _, err := os.Stat(s.receivedPath()); errors.Is(err, fs.ErrNotExist) {
		first = true
	}
	rc := s.loadReceived()
	branch := SettingsFrom(s.Config).SyncBranch
	refs, err := git.BranchCopies(ctx, s.Repo.CommonDir, branch)
	if err != nil {
		return nil, first, err
	}
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		if first || rc.Copies[ref] != refs[ref] {
			out = append(out, copyOf{source: ref, key: ref, ident: refs[ref], commit: refs[ref]})
		}
	}
	dirs := []string{LegacyEventsDir(s.Repo.Root)}
	if !git.SamePath(s.Repo.WorkTree, s.Repo.Root) {
		dirs = append(dirs, LegacyEventsDir(s.Repo.WorkTree))
	}
	for _, dir := range dirs {
		for name, path := range legacyFiles(dir) {
			if id := fileIdentity(path); first || rc.Copies[path] != id {
				out = append(out, copyOf{source: path, key: path, ident: id, files: map[string]string{name: path}})
			}
		}
	}
	if first {
		more, err := branchesWithLegacyLog(ctx, s.Repo)
		if err != nil {
			return nil, first, err
		}
		out = append(out, more...)
	}
	return out, first, nil
}

// legacyFiles lists the writer files in a work tree's .spool/events.
func legacyFiles(dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	files := map[string]string{}
	for _, e := range entries {
		if name := e.Name(); e.Type().IsRegular() && isWriterFile(name) {
			files[name] = filepath.Join(dir, name)
		}
	}
	return files
}

func isWriterFile(name string) bool {
	w, ok := strings.CutSuffix(name, eventlog.Ext)
	return ok && eventlog.ValidWriter(w)
}

func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d", durable.Inode(fi), fi.Size(), fi.ModTime().UnixNano())
}

// branchesWithLegacyLog is every local and remote-tracking branch whose
// tree has .spool/events: where the old layout kept the log.
func branchesWithLegacyLog(ctx context.Context, r *git.Repo) ([]copyOf, error) {
	refs, err := git.AllBranches(ctx, r.Root)
	if err != nil {
		return nil, err
	}
	var out []copyOf
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		files, err := git.TreeFiles(ctx, r.Root, refs[ref], ".spool/events")
		if err != nil {
			return nil, err
		}
		c := copyOf{source: ref + ":.spool/events", key: ref + ":.spool/events", ident: refs[ref], commit: refs[ref], files: map[string]string{}}
		for name, b := range files {
			if !b.Parts { // the old layout had blobs only
				c.files[name] = b.Hash
			}
		}
		if len(c.files) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// Receive brings into the log what changed in the copies of it this clone
// has (see above). Without wait it gives up at once when the log's lock is
// taken (a read does not wait: the holder, or the next command, brings
// them in), unless this clone has no log yet.
func (s *Store) Receive(ctx context.Context, wait bool) error {
	copies, first, err := s.changedCopies(ctx)
	if err != nil || len(copies) == 0 && !first {
		return err
	}
	var sess *eventlog.Session
	if wait || first {
		sess, err = s.Log.Begin(ctx)
	} else {
		var ok bool
		if sess, ok, err = s.Log.TryBegin(); err == nil && !ok {
			return nil
		}
	}
	if err != nil {
		return err
	}
	defer sess.Close()
	return s.receiveIn(ctx, sess, copies, first)
}

// receive is Receive (sess nil) or receiveIn for every copy that changed,
// whose failure is a warning: the copies are the others' events, and not
// getting them now must not stop this clone's own work.
func (s *Store) receive(ctx context.Context, sess *eventlog.Session) {
	var err error
	if sess == nil {
		if _, agent := confined(s.Repo.PrivateDir()); agent {
			return // an agent's read: the log as it is, nothing brought in
		}
		err = s.Receive(ctx, false)
	} else {
		var copies []copyOf
		var first bool
		if copies, first, err = s.changedCopies(ctx); err == nil && (len(copies) > 0 || first) {
			err = s.receiveIn(ctx, sess, copies, first)
		}
	}
	if err != nil {
		s.warn(fmt.Sprintf("events from other copies of the log not brought in: %v", err))
	}
}

// receiveIn is Receive for a caller that holds the session.
func (s *Store) receiveIn(ctx context.Context, sess *eventlog.Session, copies []copyOf, first bool) error {
	if f := optionsOf(s.opts).onLargeFold; first && f != nil {
		defer f()() // a fresh clone's first command may bring in the whole log
	}
	rc := s.loadReceived()
	legacy := 0
	var errs []error
	for _, c := range copies {
		n, err := s.receiveCopy(ctx, sess, c)
		if err != nil {
			// The others' copies still come in; this one is looked at again.
			errs = append(errs, fmt.Errorf("receive events from %s: %w", c.source, err))
			continue
		}
		if !strings.HasPrefix(c.key, "refs/") || strings.HasSuffix(c.key, ":.spool/events") {
			legacy += n
		}
		rc.Copies[c.key] = c.ident
	}
	if err := errors.Join(errs...); err != nil {
		if !first {
			s.saveReceived()
		}
		return err
	}
	if first {
		if err := os.MkdirAll(EventsDir(s.Repo), 0o755); err != nil {
			return err
		}
		if legacy > 0 {
			s.warn(fmt.Sprintf("the event log now lives in %s and is shared on the %s branch (spool sync); %d events from .spool/events on your branches and work tree were brought in, and .spool/events is no longer written (git rm -r --cached .spool/events when everyone has upgraded)",
				EventsDir(s.Repo), SettingsFrom(s.Config).SyncBranch, legacy))
		}
	}
	s.saveReceived()
	return nil
}

// saveReceived writes received.json under the log's lock.
func (s *Store) saveReceived() {
	if b, err := json.Marshal(s.loadReceived()); err == nil {
		durable.WriteCache(s.receivedPath(), b) // lost, it costs a look at each copy
	}
}

// MarkReceived records that the log holds every writer file of commit, the
// tip of ref, as blobs (name → blob id) says: what a sync pushed or
// fetched need not be read again. The caller holds the log's lock.
func (s *Store) MarkReceived(ref, commit string, blobs map[string]string) {
	rc := s.loadReceived()
	rc.Copies[ref] = commit
	maps.Copy(rc.Blobs, blobs)
	s.saveReceived()
}

// Version is a version of a writer file that the local file was, and has
// only grown from: the blob (or tree of parts), its size and its lines.
type Version struct {
	Blob  string
	Size  int64
	Lines int
}

// ReceiveCopy brings into the log the copy of writer file name that id is
// on a branch (a blob, or a tree of parts), streamed out of git; was, when
// known, lets it read only the parts after those the local file holds
// (KnownPrefix). A copy that is no file at all is quarantined
// (Session.Unreadable), and unreadable says so. lc counted the copy's lines
// and bytes as it streamed.
func ReceiveCopy(ctx context.Context, sess *eventlog.Session, repo, name, path, id string, was *Version, source string) (res eventlog.Received, lc eventlog.LineCounter, unreadable bool, err error) {
	var known eventlog.Known
	var rest []git.Part
	if was != nil {
		known, rest = KnownPrefix(ctx, repo, path, was.Blob, was.Size, was.Lines, id)
	}
	res, err = sess.ReceiveFromKnown(name, known, func(w io.Writer) error {
		lc = eventlog.LineCounter{W: w, Lines: known.Lines, Bytes: int(known.Size)}
		return git.CopyParts(ctx, repo, rest, &lc)
	}, func(w io.Writer) error {
		lc = eventlog.LineCounter{W: w} // counted again if streamed again
		return git.CopyBlob(ctx, repo, id, &lc)
	}, source)
	if errors.Is(err, git.ErrNotAFile) {
		unreadable = true
		res, err = sess.Unreadable(name, source, err.Error())
	}
	return res, lc, unreadable, err
}

// KnownPrefix is what the writer file at path shares with a copy stored in
// parts (theirs), when the file was the version ours (of size bytes and
// lines lines) and has only grown since: the parts both versions hold where
// they stand are the file's. rest are the copy's parts after those. Nothing
// is known when either is not a file in parts.
func KnownPrefix(ctx context.Context, repo, path, ours string, size int64, lines int, theirs string) (known eventlog.Known, rest []git.Part) {
	a, err := git.FileParts(ctx, repo, ours)
	if err != nil || git.SizeOf(a) != size {
		return known, nil
	}
	b, err := git.FileParts(ctx, repo, theirs)
	if err != nil {
		return known, nil
	}
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	if k == 0 {
		return known, nil
	}
	at := git.SizeOf(a[:k])
	f, err := os.Open(path)
	if err != nil {
		return known, nil
	}
	defer f.Close()
	lc := &eventlog.LineCounter{W: io.Discard} // the lines of ours after at: a part or two
	if _, err := io.Copy(lc, io.NewSectionReader(f, at, size-at)); err != nil || lc.Lines > lines {
		return known, nil
	}
	return eventlog.Known{Size: at, Lines: lines - lc.Lines}, b[k:]
}

// receiveCopy brings one copy's writer files in and returns the events added.
func (s *Store) receiveCopy(ctx context.Context, sess *eventlog.Session, c copyOf) (int, error) {
	files := c.files
	if files == nil {
		blobs, err := git.TreeFiles(ctx, s.Repo.Root, c.commit, SyncBranchDir)
		if err != nil {
			return 0, err
		}
		files = map[string]string{}
		for name, b := range blobs {
			files[name] = b.Hash
		}
	}
	added, rc := 0, s.loadReceived()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !isWriterFile(name) || c.commit != "" && rc.Blobs[name] == files[name] {
			continue // not spool's (left where it is, never read), or received already
		}
		var res eventlog.Received
		var err error
		path := filepath.Join(EventsDir(s.Repo), name)
		got := ReceivedFile{Blob: files[name]}
		if c.commit != "" {
			// Streamed, never held in memory: a writer file new here (all
			// of them, in a fresh clone) into place, one this clone has
			// compared with it and what it adds appended.
			var was *Version
			if f, ok := rc.Files[name]; ok && f.Size > 0 && GrownFrom(path, f.Inode, f.Size, f.Tail) {
				was = &Version{Blob: f.Blob, Size: f.Size, Lines: f.Lines}
			}
			var lc eventlog.LineCounter
			res, lc, _, err = ReceiveCopy(ctx, sess, s.Repo.Root, name, path, files[name], was, c.source)
			got.Lines = lc.Lines
			if fi, statErr := os.Stat(path); err == nil && res.Held && statErr == nil {
				// The file begins with the blob (is it, when Same).
				got.Inode, got.Size, got.MTime = durable.Inode(fi), int64(lc.Bytes), fi.ModTime().UnixNano()
				got.Tail = FileTailSum(path, got.Size)
			}
		} else {
			var content []byte
			content, err = os.ReadFile(files[name])
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed by a checkout meanwhile
			}
			if err != nil {
				return added, err
			}
			res, err = sess.Receive(name, content, c.source)
			got.Lines = bytes.Count(content, []byte{'\n'})
		}
		if err != nil {
			return added, err
		}
		added += res.Added
		if c.commit != "" {
			rc.Blobs[name] = files[name]
			rc.Files[name] = got
		}
	}
	return added, nil
}

// GrownFrom says whether the file at path is still the file of inode it
// was, at least size bytes long, and its bytes before size still sum to
// tail (TailSum): appended to, a writer file keeps its inode and what it
// had.
func GrownFrom(path string, inode uint64, size int64, tail string) bool {
	fi, err := os.Stat(path)
	return err == nil && durable.Inode(fi) == inode && fi.Size() >= size && tail != "" && FileTailSum(path, size) == tail
}

// tailLen is how much of a file before a size TailSum reads: a few lines.
const tailLen = 4096

// TailSum is a checksum (CRC-32C, hex) of the bytes of r before size, at
// most tailLen of them; "" when they cannot be read. With a file's inode
// it says the file still begins as it did at that size: a file rewritten
// by a rename (a repair, a union) may get the inode its old self had, but
// its lines (each with its id and seq) are not where the old ones were.
func TailSum(r io.ReaderAt, size int64) string {
	from := max(0, size-tailLen)
	b := make([]byte, size-from)
	if n, err := r.ReadAt(b, from); n != len(b) && err != nil {
		return ""
	}
	return strconv.FormatUint(uint64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))), 16)
}

// FileTailSum is TailSum of the file at path.
func FileTailSum(path string, size int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return TailSum(f, size)
}

func init() {
	config.Register(config.Key{Name: "sync.branch", Kind: config.String, Default: DefaultSyncBranch, Check: func(v any) error { return refname.CheckBranch(v.(string)) },
		Help: "the branch the log is committed and shared on (events/<writer>.jsonl); nobody checks it out"})
}
