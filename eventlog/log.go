package eventlog

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
)

// Ext is the extension of writer files.
const Ext = ".jsonl"

// Options locates a log. Events live in Dir (tracked by git); the lock, the
// writer id and torn-tail backups live in PrivateDir, which git never touches.
type Options struct {
	Dir         string
	PrivateDir  string
	LockTimeout time.Duration // 0 means 10 s
	Warn        func(msg string)
	Signer      Signer // signs every event appended; nil: none is signed
	// MayWrite, when set, is asked by Begin and TryBegin before they take
	// the lock: an error refuses the session, so nothing is appended or
	// received (internal/store refuses an agent's commands so).
	MayWrite func() error
	// Warning, when set, takes the place of Warn: it is told of each
	// warning with its code (CodeTornTailRepaired, fault.CodeWarning).
	Warning func(fault.Warning)
}

// Signer signs an event as it is appended, inside the lock: it gets the
// event, id set, and its content hash, and returns the event's sig ("" to
// leave it unsigned). An error refuses the append: nothing is written.
type Signer interface {
	SignEvent(e *Event, hash [sha256.Size]byte) (string, error)
}

// Log is a handle on the event log of one clone.
type Log struct {
	opt        Options
	mu         sync.Mutex  // guards writer: a Log may be shared by goroutines
	writer     string      // cached writer id
	writerFile os.FileInfo // the file it was read from, to notice a new id (Rehome)
}

// Open returns a handle; nothing is created until the first append.
func Open(opt Options) *Log {
	if opt.LockTimeout == 0 {
		opt.LockTimeout = 10 * time.Second
	}
	if opt.Warn == nil {
		opt.Warn = func(string) {}
	}
	if opt.Warning == nil {
		warn := opt.Warn
		opt.Warning = func(w fault.Warning) { warn(w.Message) }
	}
	return &Log{opt: opt}
}

// CodeTornTailRepaired is the warning of a torn tail moved aside.
var CodeTornTailRepaired = fault.RegisterWarning("torn_tail_repaired")

// warnText is a warning with no code of its own.
func (l *Log) warnText(msg string) { l.opt.Warning(fault.Warned(msg)) }

// Dir is the directory of writer files.
func (l *Log) Dir() string { return l.opt.Dir }

// LockPath is the file the log locks; it is never deleted.
func (l *Log) LockPath() string { return filepath.Join(l.opt.PrivateDir, "lock") }

// Files lists the writer files, sorted by writer id.
func (l *Log) Files() ([]string, error) {
	entries, err := os.ReadDir(l.opt.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list event files: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), Ext) {
			files = append(files, filepath.Join(l.opt.Dir, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

// WriterOf returns the writer id a file belongs to.
func WriterOf(path string) string { return strings.TrimSuffix(filepath.Base(path), Ext) }

// WriterID returns this clone's writer id, creating it on first use.
func (l *Log) WriterID() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := filepath.Join(l.opt.PrivateDir, "writer")
	st, statErr := os.Stat(path)
	if l.writer != "" && statErr == nil && os.SameFile(st, l.writerFile) {
		return l.writer, nil // a long-running process learns of a new id (Rehome) at its next session
	}
	id, err := l.loadWriterID()
	if err == nil {
		l.writer = id
		l.writerFile, _ = os.Stat(path)
	}
	return id, err
}

func (l *Log) loadWriterID() (string, error) {
	path := filepath.Join(l.opt.PrivateDir, "writer")
	b, err := os.ReadFile(path)
	if err == nil && ValidWriter(strings.TrimSpace(string(b))) {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read writer id: %w", err)
	}
	damaged := err == nil // e.g. left empty by a process killed while creating it
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(l.opt.PrivateDir, 0o755); err != nil {
		return "", err
	}
	// Write the id aside and link it into place, so that the file is never
	// seen half written; if another process won the race, use its id.
	tmp, err := os.CreateTemp(l.opt.PrivateDir, "writer.*.tmp")
	if err != nil {
		return "", fmt.Errorf("create writer id: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(id + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write writer id: %w", err)
	}
	switch {
	case damaged:
		err = os.Rename(tmp.Name(), path)
	default:
		if err = os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
			// No hard links on this file system: create in place.
			err = createExclusive(path, id+"\n")
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create writer id: %w", err)
	}
	if err := durable.SyncDir(l.opt.PrivateDir); err != nil {
		return "", err
	}
	b, err = os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read writer id: %w", err)
	}
	if got := strings.TrimSpace(string(b)); ValidWriter(got) {
		return got, nil
	}
	return "", fmt.Errorf("%s holds no valid writer id", path)
}

func createExclusive(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ValidWriter says whether s can be a writer id (and so name a writer file).
func ValidWriter(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Tail is what the last line of a writer file says.
type Tail struct {
	Writer string
	Seq    uint64
	LC     uint64
	ID     string // the id the writer's next event names as prev
	Size   int64
	At     time.Time // the time of the writer's last event
}

// Tails reads the last complete line of every writer file.
func (l *Log) Tails() ([]Tail, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	tails := make([]Tail, 0, len(files))
	for _, path := range files {
		t, err := readTail(path)
		if err != nil {
			return nil, err
		}
		tails = append(tails, t)
	}
	return tails, nil
}

// VersionOf renders tails as the log's version: every writer's last seq.
func VersionOf(tails []Tail) string {
	parts := make([]string, 0, len(tails))
	for _, t := range tails {
		if t.Seq > 0 {
			parts = append(parts, t.Writer+":"+strconv.FormatUint(t.Seq, 10))
		}
	}
	return strings.Join(parts, ",")
}

// readTail decodes the last '\n'-terminated line of path; a torn tail after it is ignored.
func readTail(path string) (Tail, error) {
	f, err := os.Open(path)
	if err != nil {
		return Tail{Writer: WriterOf(path)}, err
	}
	defer f.Close()
	return tailOf(f, path)
}

func tailOf(f *os.File, path string) (Tail, error) {
	t := Tail{Writer: WriterOf(path)}
	st, err := f.Stat()
	if err != nil {
		return t, err
	}
	t.Size = st.Size()
	line, start, err := lastLine(f, t.Size)
	if err != nil || line == nil {
		return t, err
	}
	e, err := Decode(line)
	if err != nil {
		return t, &LineError{Path: path, Line: lineNumber(f, start), Err: err, Hint: hintFor(err)}
	}
	t.Seq, t.LC, t.ID, t.At = e.Seq, e.LC, e.ID, e.At
	return t, nil
}

// lastLine returns the last complete line in the first size bytes of f and its offset.
func lastLine(f *os.File, size int64) ([]byte, int64, error) {
	end := size
	// Ignore a torn tail: find the last '\n' first.
	for window := int64(4096); ; window *= 2 {
		start := max(end-window, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return nil, 0, err
		}
		nl := bytes.LastIndexByte(buf, '\n')
		if nl < 0 {
			if start == 0 {
				return nil, 0, nil
			}
			continue
		}
		lineEnd := start + int64(nl) + 1
		prev := bytes.LastIndexByte(buf[:nl], '\n')
		if prev >= 0 {
			return buf[prev+1 : nl+1], start + int64(prev) + 1, nil
		}
		if start == 0 {
			return buf[:nl+1], 0, nil
		}
		end = lineEnd // the window held only part of the line: widen it
	}
}

// lineNumber counts the lines before offset, for error messages.
func lineNumber(f *os.File, offset int64) int {
	n := 1
	buf := make([]byte, 64<<10)
	for pos := int64(0); pos < offset; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), offset-pos)], pos)
		n += bytes.Count(buf[:k], []byte{'\n'})
		pos += int64(k)
		if err != nil {
			break
		}
	}
	return n
}

// readOwnTail reads the tail of this writer's open file with one stat and
// one read in the common case (a last line that ends in '\n' and closes its
// batch), and repairs the file first otherwise.
func (s *Session) readOwnTail(path string) (Tail, error) {
	st, err := s.file.Stat()
	if err != nil {
		return Tail{}, err
	}
	s.ownInfo = st
	if t, ok := quickTail(s.file, path, st.Size()); ok {
		return t, nil
	}
	if err := s.log.repairTail(s.file, path); err != nil {
		return Tail{}, err
	}
	return tailOf(s.file, path)
}

// quickTail decodes the last line from one read of the file's end; ok is
// false when that is not enough or the tail needs repair.
func quickTail(f *os.File, path string, size int64) (Tail, bool) {
	t := Tail{Writer: WriterOf(path), Size: size}
	if size == 0 {
		return t, true
	}
	start := max(size-4096, 0)
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return t, false
	}
	if buf[len(buf)-1] != '\n' {
		return t, false // torn
	}
	prev := bytes.LastIndexByte(buf[:len(buf)-1], '\n')
	if prev < 0 && start > 0 {
		return t, false // a line longer than the window
	}
	e, err := Decode(buf[prev+1:])
	if err != nil || e.More {
		return t, false // let the slow path report it, or drop an unfinished batch
	}
	t.Seq, t.LC, t.ID, t.At = e.Seq, e.LC, e.ID, e.At
	return t, true
}

// Session holds the log's lock; appends happen inside one.
type Session struct {
	log     *Log
	lock    *flock.Flock
	file    *os.File    // this writer's file, opened for append (nil until it exists)
	ownInfo os.FileInfo // its identity when opened, to notice git replacing it
	writer  string
	tails   []Tail
	seq     uint64    // last seq of this writer
	prev    string    // and the id of its last event
	last    time.Time // and its time: the next is never before it (Append)
	lc      uint64    // largest lc in the log
}

// Begin takes the lock, repairs a torn tail of this clone's file and reads the log's head.
func (l *Log) Begin(ctx context.Context) (*Session, error) {
	if err := l.mayWrite(); err != nil {
		return nil, err
	}
	lock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	s := &Session{log: l, lock: lock}
	if err := s.load(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// TryBegin is Begin when the lock is free at once; ok is false otherwise.
func (l *Log) TryBegin() (s *Session, ok bool, err error) {
	if err := l.mayWrite(); err != nil {
		return nil, false, err
	}
	lock := flock.New(l.LockPath())
	if ok, err = l.tryLock(lock); err != nil || !ok {
		return nil, false, err
	}
	s = &Session{log: l, lock: lock}
	if err := s.load(); err != nil {
		s.Close()
		return nil, false, err
	}
	return s, true, nil
}

func (l *Log) mayWrite() error {
	if l.opt.MayWrite == nil {
		return nil
	}
	return l.opt.MayWrite()
}

// Lock takes the log's lock without reading the log, for readers that need
// a still log (verify); the returned function releases it.
func (l *Log) Lock(ctx context.Context) (func(), error) {
	lock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	return func() { lock.Unlock() }, nil
}

// TryLock takes the lock only if it is free at once: for work that can be
// left to the next command (a read saving its projections).
func (l *Log) TryLock() (unlock func(), ok bool, err error) {
	lock := flock.New(l.LockPath())
	if ok, err = l.tryLock(lock); err != nil || !ok {
		return nil, false, err
	}
	return func() { lock.Unlock() }, true, nil
}

func (l *Log) tryLock(lock *flock.Flock) (bool, error) {
	ok, err := lock.TryLock()
	if errors.Is(err, fs.ErrNotExist) {
		// First use in this clone (a fresh clone's first command is a read).
		if err := os.MkdirAll(l.opt.PrivateDir, 0o755); err != nil {
			return false, err
		}
		ok, err = lock.TryLock()
	}
	return ok, err
}

func (l *Log) lock(ctx context.Context) (*flock.Flock, error) {
	lock := flock.New(l.LockPath())
	ctx, cancel := context.WithTimeout(ctx, l.opt.LockTimeout)
	defer cancel()
	ok, err := lock.TryLockContext(ctx, 5*time.Millisecond)
	if errors.Is(err, fs.ErrNotExist) {
		// First use in this clone: make the private dir and try again.
		if err := os.MkdirAll(l.opt.PrivateDir, 0o755); err != nil {
			return nil, err
		}
		ok, err = lock.TryLockContext(ctx, 5*time.Millisecond)
	}
	if !ok {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s held for more than %s", ErrLockTimeout, l.LockPath(), l.opt.LockTimeout)
		}
		return nil, fmt.Errorf("lock %s: %w", l.LockPath(), err)
	}
	return lock, nil
}

func (s *Session) load() error {
	if err := s.log.finishRehome(); err != nil {
		return err
	}
	var err error
	if s.writer, err = s.log.WriterID(); err != nil {
		return err
	}
	own := s.path()
	s.file, err = os.OpenFile(own, os.O_RDWR|os.O_APPEND, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var ownTail Tail
	if s.file != nil {
		if ownTail, err = s.readOwnTail(own); err != nil {
			return err
		}
	}
	files, err := s.log.Files()
	if err != nil {
		return err
	}
	for _, path := range files {
		var t Tail
		if path == own && s.file != nil {
			t = ownTail
		} else {
			t, err = readTail(path)
		}
		if err != nil {
			return err
		}
		s.tails = append(s.tails, t)
		s.lc = max(s.lc, t.LC)
		if t.Writer == s.writer {
			s.seq, s.prev, s.last = t.Seq, t.ID, t.At
		}
	}
	return nil
}

// Reload reads the log's head again, for a session whose holder changed
// the files under the lock (a claim bringing in the remote's events).
func (s *Session) Reload() error {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	s.ownInfo, s.tails, s.seq, s.prev, s.lc, s.last = nil, nil, 0, "", 0, time.Time{}
	return s.load()
}

func (s *Session) path() string { return filepath.Join(s.log.opt.Dir, s.writer+Ext) }

// Writer is this clone's writer id.
func (s *Session) Writer() string { return s.writer }

// Version is the log's version as this session found it.
func (s *Session) Version() string { return VersionOf(s.tails) }

// Close releases the lock.
func (s *Session) Close() error {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	return s.lock.Unlock()
}

// repairTail truncates a last line without '\n' after backing it up.
func (l *Log) repairTail(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	lineEnd, _, err := tornTail(f, st.Size())
	if err != nil {
		return err
	}
	keep, err := unfinishedBatch(f, lineEnd)
	if err != nil {
		return err
	}
	if keep == st.Size() {
		return nil
	}
	torn := make([]byte, st.Size()-keep)
	if _, err := f.ReadAt(torn, keep); err != nil && err != io.EOF {
		return err
	}
	backup := filepath.Join(l.opt.PrivateDir, "torn", fmt.Sprintf("%s.%d", filepath.Base(path), time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(backup), 0o755); err != nil {
		return err
	}
	if err := durable.WriteFile(backup, torn, 0o644); err != nil {
		return fmt.Errorf("back up torn tail: %w", err) // nothing half written is left: the backup is renamed into place whole
	}
	if err := f.Truncate(keep); err != nil {
		return fmt.Errorf("truncate torn tail: %w", err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	what := "without a newline"
	if keep < lineEnd {
		what = "of an append that never finished"
	}
	l.opt.Warning(fault.Warning{Code: CodeTornTailRepaired,
		Message: fmt.Sprintf("repaired torn tail of %s: %d bytes %s moved to %s", path, len(torn), what, backup)})
	return nil
}

// unfinishedBatch moves end back over complete lines that belong to a batch
// whose last event never reached the file (they all carry "more").
func unfinishedBatch(f *os.File, end int64) (int64, error) {
	for end > 0 {
		line, start, err := lastLine(f, end)
		if err != nil || line == nil {
			return end, err
		}
		e, err := Decode(line)
		if err != nil || !e.More {
			return end, nil // a bad line is reported by readers, not silently cut
		}
		end = start
	}
	return end, nil
}

// tornTail returns the length to keep and the torn bytes after the last '\n' (nil if none).
func tornTail(r io.ReaderAt, size int64) (int64, []byte, error) {
	if size == 0 {
		return 0, nil, nil
	}
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return 0, nil, err
	}
	if last[0] == '\n' {
		return size, nil, nil
	}
	keep := int64(0)
	for end := size; end > 0; {
		start := max(end-4096, 0)
		buf := make([]byte, end-start)
		if _, err := r.ReadAt(buf, start); err != nil && err != io.EOF {
			return 0, nil, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	torn := make([]byte, size-keep)
	if _, err := r.ReadAt(torn, keep); err != nil && err != io.EOF {
		return 0, nil, err
	}
	return keep, torn, nil
}

// AppendOptions are checks made before appending.
type AppendOptions struct {
	// ExpectVersion refuses the append with ErrVersionMismatch unless the log
	// is at this version; a batch whose every draft repeats an idempotency
	// key already in the log appends nothing and is not refused.
	ExpectVersion *string
	// Publish, when set, is given the encoded lines before they are
	// written; an error appends nothing. A claim through the git remote
	// pushes them there first: only what the remote accepted is written.
	Publish func(writer string, lines []byte) error
}

// MaxClockStep is how far behind the writer's last event a clock may be
// and still be held to that event's time (see Append).
const MaxClockStep = 10 * time.Minute

// Append writes drafts as one batch and returns the events; it returns once
// they are on disk (fsync). A draft whose idempotency key is already in the log
// appends nothing and yields the first event with that key instead.
//
// An event's time is at, or the time of this writer's last event when at is
// before it by at most MaxClockStep (a clock stepped back by NTP, a VM
// resumed): as a hybrid logical clock, the times of one writer's file do not
// go backwards (an audit trail read from them never goes back in time), and an
// append is never refused for it. The caller's decisions keep their own clock;
// only the record is held. A step back further than that is no clock's jitter
// but a last event dated in the future (SPOOL_NOW set ahead once, a clock that
// ran ahead): holding every later event to it would date them all there
// (quotas, leases, aging read those times), so the event keeps its own time,
// with a warning, and verify reports the file.
func (s *Session) Append(at time.Time, actor string, drafts []Draft, opt AppendOptions) ([]Event, error) {
	if at.Before(s.last) {
		if back := s.last.Sub(at); back <= MaxClockStep {
			at = s.last
		} else {
			s.log.warnText(fmt.Sprintf("this clone's last event is dated %s, %s after now: the clock ran ahead or SPOOL_NOW was set ahead; recorded at now (spool verify reports it)",
				s.last.UTC().Format(time.RFC3339), back.Round(time.Second)))
		}
	}
	out := make([]Event, len(drafts))
	var lines []byte
	var fresh []int // indexes of events to write
	seenIdem := map[string]int{}
	sameAs := map[int]int{} // a repeated key in this batch gets the event of its first draft
	for i, d := range drafts {
		if d.Idem != "" {
			if j, ok := seenIdem[d.Idem]; ok {
				sameAs[i] = j
				continue
			}
			prev, err := s.log.FindIdem(d.Idem)
			if err != nil {
				return nil, err
			}
			seenIdem[d.Idem] = i
			if prev != nil {
				out[i] = *prev
				continue
			}
		}
		fresh = append(fresh, i)
	}
	prev := s.prev
	for k, i := range fresh {
		// Every event of a batch but the last says more follows, so a crash
		// that leaves part of the batch is recognised and the part dropped.
		e, err := s.build(drafts[i], at, actor, k, prev, k < len(fresh)-1)
		if err != nil {
			return nil, err
		}
		prev = e.ID
		line, err := e.Encode()
		if err != nil {
			return nil, err
		}
		if len(line) > MaxLine {
			// Readers take a longer line for corruption: the log would be unreadable.
			return nil, fmt.Errorf("%w: %s is %d bytes encoded, more than %d", ErrInvalidDraft, drafts[i].Type, len(line), MaxLine)
		}
		out[i] = *e
		lines = append(lines, line...)
	}
	for i, j := range sameAs {
		out[i] = out[j]
	}
	if len(fresh) == 0 {
		// A retry whose first attempt moved the log still gets its events.
		return out, nil
	}
	if opt.ExpectVersion != nil && *opt.ExpectVersion != s.Version() {
		return nil, &VersionError{Expected: *opt.ExpectVersion, Actual: s.Version()}
	}
	if opt.Publish != nil {
		if err := opt.Publish(s.writer, lines); err != nil {
			return nil, err
		}
	}
	if err := s.write(lines); err != nil {
		return nil, err
	}
	s.seq += uint64(len(fresh))
	s.lc += uint64(len(fresh))
	s.prev = prev
	s.last = at.UTC()
	s.updateTail()
	return out, nil
}

func (s *Session) build(d Draft, at time.Time, actor string, k int, prev string, more bool) (*Event, error) {
	if !ValidType(d.Type) {
		return nil, fmt.Errorf("%w: type %q is not dotted lowercase words like task.created", ErrInvalidDraft, d.Type)
	}
	// encoding/json would replace invalid UTF-8, and the id would no longer
	// be the hash of the line read back.
	for _, f := range [][2]string{{"actor", actor}, {"subject", d.Subject}, {"idem", d.Idem}} {
		if !utf8.ValidString(f[1]) {
			return nil, fmt.Errorf("%w: %s of %s is not valid UTF-8", ErrInvalidDraft, f[0], d.Type)
		}
	}
	e := &Event{V: Version, Writer: s.writer, Seq: s.seq + uint64(k) + 1, Prev: prev, LC: s.lc + uint64(k) + 1,
		At: at.UTC(), Actor: actor, Type: d.Type, Subject: d.Subject, Idem: d.Idem, More: more}
	switch data := d.Data.(type) {
	case nil:
	case json.RawMessage:
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return nil, fmt.Errorf("%w: data of %s: %v", ErrInvalidDraft, d.Type, err)
		}
		if !utf8.Valid(buf.Bytes()) {
			return nil, fmt.Errorf("%w: data of %s is not valid UTF-8", ErrInvalidDraft, d.Type)
		}
		e.Data = buf.Bytes()
	default:
		b, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("%w: data of %s: %v", ErrInvalidDraft, d.Type, err)
		}
		e.Data = b
	}
	sum, err := e.ContentHash()
	if err != nil {
		return nil, err
	}
	e.ID = idOf(sum[:])
	if s.log.opt.Signer != nil {
		if e.Sig, err = s.log.opt.Signer.SignEvent(e, sum); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// write appends lines in one write and syncs; a new file also syncs its directory.
func (s *Session) write(lines []byte) error {
	path := s.path()
	if s.file == nil {
		dir := s.log.opt.Dir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// O_EXCL: a file that appeared since Begin holds lines this session
		// has not seen (git checked it out), and seq would collide.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return replacedError(path)
		}
		if err != nil {
			return err
		}
		s.file = f
		if s.ownInfo, err = f.Stat(); err != nil {
			return err
		}
		if err := durable.SyncDir(dir); err != nil {
			return err
		}
	} else if err := s.stillOwnFile(path); err != nil {
		return err
	}
	before := s.ownInfo.Size()
	if st, err := s.file.Stat(); err == nil {
		before = st.Size()
	}
	_, err := s.file.Write(lines)
	if err == nil {
		err = s.file.Sync()
	}
	if err != nil {
		// Not acknowledged, so not in the file either: a disk that filled up
		// mid-write must not leave a torn tail for the next read to trip on.
		if terr := s.file.Truncate(before); terr == nil {
			s.file.Sync()
		}
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

// stillOwnFile checks that the open file is still the one at path: git does
// not take spool's lock, and a checkout or merge that replaced the file
// would make the append land in an unlinked file, acknowledged and lost.
func (s *Session) stillOwnFile(path string) error {
	now, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(s.ownInfo, now) {
		return replacedError(path)
	}
	return err
}

func replacedError(path string) error {
	return fmt.Errorf("%w: %s was replaced during the command (by a git checkout or merge?); nothing appended, try again", ErrVersionMismatch, path)
}

func (s *Session) updateTail() {
	for i := range s.tails {
		if s.tails[i].Writer == s.writer {
			s.tails[i].Seq, s.tails[i].LC, s.tails[i].ID, s.tails[i].At = s.seq, s.lc, s.prev, s.last
			return
		}
	}
	s.tails = append(s.tails, Tail{Writer: s.writer, Seq: s.seq, LC: s.lc, ID: s.prev, At: s.last})
	sort.Slice(s.tails, func(i, j int) bool { return s.tails[i].Writer < s.tails[j].Writer })
}

// Append is Begin, Session.Append and Close in one call.
func (l *Log) Append(ctx context.Context, at time.Time, actor string, drafts []Draft, opt AppendOptions) ([]Event, error) {
	s, err := l.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Append(at, actor, drafts, opt)
}

// FindIdem returns the first event carrying idempotency key key, or nil.
// It scans the raw files for the encoded key and decodes only candidate lines.
func (l *Log) FindIdem(key string) (*Event, error) {
	needle := append([]byte(`"idem":`), quote(key)...)
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	var first *Event
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for off := 0; ; {
			i := bytes.Index(b[off:], needle)
			if i < 0 {
				break
			}
			start := bytes.LastIndexByte(b[:off+i], '\n') + 1
			end := bytes.IndexByte(b[off+i:], '\n')
			if end < 0 {
				break // torn tail
			}
			end += off + i
			if e, err := Decode(b[start:end]); err == nil && e.Idem == key && (first == nil || e.Before(first)) {
				first = e
			}
			off = end
		}
	}
	return first, nil
}

// quote encodes s as the log's encoder does (no HTML escaping).
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}
