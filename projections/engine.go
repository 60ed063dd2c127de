// Package projections folds the event log into derived state and persists it.
//
// Every projection keeps a snapshot (.spool/state/<name>.snap): a checkpoint
// line saying how far each writer file was applied, then the folded state.
// Both live in one file replaced atomically, so state and checkpoint never
// disagree. Public files (tasks.json, PRD manifests, ...) are rendered from
// the state and written before the snapshot, so a crash between the two only
// causes the same events to be applied again to the old snapshot.
package projections

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/table"
)

// Projection is a pure fold of events into state.
type Projection interface {
	// Apply folds one event. Types it does not know are ignored, so events
	// from a newer spool pass through.
	Apply(e *eventlog.Event) error
	// MarshalState and UnmarshalState persist the state between commands.
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
	// Files renders the public files (see File for where they go).
	Files() ([]File, error)
}

// File is one rendered projection file.
type File struct {
	Path     string // slash-separated: relative to Engine.Root in the work tree, to Engine.FilesDir otherwise
	Data     []byte
	WorkTree bool // in the work tree, for people and tools to read there (git ignores it)
}

// Spec registers a projection.
type Spec struct {
	Name    string
	Version int // bump when the state format changes: old snapshots are rebuilt
	New     func() Projection
	// Amortize, when > 0, lets a command leave up to 1/Amortize of the events
	// a projection has applied unsaved: its snapshot and files are rewritten
	// only when more events than that arrived since the snapshot on disk (a
	// rebuild always saves). For projections whose state grows with the log,
	// so that a command costs O(new events) rather than O(state): commands
	// catch up in memory from the older snapshot and see the same state; only
	// the files on disk lag, by a bounded number of events.
	Amortize int
	// Overlay, when > 0, has an Overlayer's save that is put off write an
	// overlay once that many events are unsaved since the snapshot or the
	// last overlay, so that commands catch up on at most about that many.
	Overlay int
}

// Engine keeps projections up to date with the log.
type Engine struct {
	Log      *eventlog.Log
	Root     string // repository root, where work-tree files go
	FilesDir string // where the files nobody commits go ("": Root)
	StateDir string // where snapshots live
	Specs    []Spec
	// Progress, when set, is called every progressEvery events of a rebuild,
	// and once with done at its end.
	Progress func(applied int, done bool)
	// SpillDir, when set, is where a Spiller keeps the bulk of its state
	// while Rebuild or Verify folds the whole log.
	SpillDir string
	// Warn, when set, is told of a snapshot rebuilt because it was damaged.
	Warn func(string)
	// OnLargeSave, if set, runs before a large Freezer's files and snapshot
	// are written (or verified) and returns what runs once both are: spool
	// turns the collector, off for a short command, on for them.
	OnLargeSave func() (done func())
}

func (en *Engine) warn(msg string) {
	if en.Warn != nil {
		en.Warn(msg)
	}
}

// FilePath is where the file at path goes.
func (en *Engine) FilePath(path string, workTree bool) string {
	if workTree || en.FilesDir == "" {
		return filepath.Join(en.Root, filepath.FromSlash(path))
	}
	return filepath.Join(en.FilesDir, filepath.FromSlash(path))
}

// The times a projection keeps: nanoseconds since 1970 in an int64 (the
// tables' encoding), as spool import's checkTimes allows.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// Usable is e as every projection folds it, or false when no projection
// can: an event whose time is zero, or before 1678 or after 2262, which no
// snapshot can keep (spool writes the time it appends; anyone who can push
// can write any). A time with an offset is folded as the same instant in
// UTC, as spool writes it. The engine applies only what Usable gives.
func Usable(e *eventlog.Event) (*eventlog.Event, bool) {
	if e.At.IsZero() || e.At.Before(minTime) || e.At.After(maxTime) {
		return nil, false
	}
	if e.At.Location() != time.UTC {
		c := *e
		c.At = c.At.UTC()
		return &c, true
	}
	return e, true
}

// KeptTime is t as a projection keeps a time from an event's data: in
// UTC, and false when no snapshot can keep it (before 1678 or after 2262;
// the zero time, "none", is kept). A fold skips an event whose times it
// cannot keep.
func KeptTime(t time.Time) (time.Time, bool) {
	if t.IsZero() {
		return t, true
	}
	return t.UTC(), !t.Before(minTime) && !t.After(maxTime)
}

// inWorkTree reports whether full, a work-tree file's path, stays inside
// the work tree once the links on the way are resolved (durable.Within). A
// projection names its work-tree files from the log (a feature's slug), and
// the directories on the way are whatever was committed: a docs/prd/_queue
// that is a link to a directory outside must not have spool write there.
// Such a file is neither written nor read; verify reports it.
func (en *Engine) inWorkTree(full string) bool {
	_, err := durable.Within(en.Root, full)
	return err == nil
}

// Spiller is a projection that can keep the bulk of its state in a file
// in dir while a fold nobody decides on runs (Rebuild, Verify): its
// writers still write the whole state, but its values no longer hold it.
type Spiller interface {
	Spill(dir string) error
}

// Expander is a projection read lazily from its snapshot (records
// decoded as they are asked for) that a reader has since made whole. A
// process that keeps its views (the board, the MCP server) opens such a
// one afresh rather than keep it: answers that read the snapshot's
// sections (counts, a task and its dependents) are computed from the
// whole instead, and at 100,000 tasks took 0.3 s where they took 4 ms.
type Expander interface {
	Expanded() bool
}

// Expanded says whether a projection of the view was made whole since it
// was read from its snapshot (Expander).
func (v *View) Expanded() bool {
	for _, it := range v.items {
		if x, ok := it.proj.(Expander); ok && x.Expanded() {
			return true
		}
	}
	return false
}

const progressEvery = 100_000

// Key is a position in replay order.
type Key struct {
	LC     uint64 `json:"lc"`
	Writer string `json:"writer"`
	Seq    uint64 `json:"seq"`
}

func keyOf(e *eventlog.Event) Key { return Key{e.LC, e.Writer, e.Seq} }

func (k Key) before(e *eventlog.Event) bool {
	return (&eventlog.Event{LC: k.LC, Writer: k.Writer, Seq: k.Seq}).Before(e)
}

// Mark is how far one writer file was applied.
type Mark struct {
	Offset int64  `json:"offset"`
	Line   int    `json:"line"`
	Len    int64  `json:"len"`    // length of the last applied line
	CRC    uint32 `json:"crc"`    // CRC-32 (IEEE) of that line
	Prefix uint32 `json:"prefix"` // CRC-32 (IEEE) of the file up to Offset
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime"`
	Inode  uint64 `json:"inode"`
}

func (m Mark) start() eventlog.Start {
	return eventlog.Start{Offset: m.Offset, Line: m.Line, Len: m.Len, CRC: m.CRC, Prefix: m.Prefix}
}

// Checkpoint is the first line of a snapshot.
type Checkpoint struct {
	Format  int             `json:"format"`
	Name    string          `json:"name"`
	Version int             `json:"version"`
	Events  int             `json:"events"`
	Last    Key             `json:"last"`
	Marks   map[string]Mark `json:"marks"`
	// Sum is the checksum of the state after the checkpoint line, for a
	// state loaded whole (an Opener's records carry checksums of their
	// own): a snapshot edited by hand, or by anything but spool, is not
	// loaded but rebuilt from the log. "crc32:" and 8 hex digits (bodySum).
	Sum string `json:"sum,omitempty"`
}

// checkpointFormat is the Checkpoint's own version: snapshots of another
// format are rebuilt (format 1 had no prefix checksums or inodes, format 2
// no checksum of the state, format 3 CRC-32C checksums, whose tables took
// every command 0.15 ms to make).
const checkpointFormat = 4

// View is a set of projections loaded for one command.
type View struct {
	en    *Engine
	items []*item
	// extras are the other projections that needed a rebuild when one of
	// the view's did: rebuilt in the same pass and saved with the view, so
	// that a fresh clone reads its log once, not once per projection.
	extras []*item
}

type item struct {
	spec  Spec
	proj  Projection
	cp    Checkpoint
	dirty bool
	// restat: a writer file's prefix was checksummed (it was replaced or
	// touched): save even if saves are amortized, so that the marks,
	// stamped with the file's stat again, spare the next command the checksum.
	restat bool
	saved  int // events in the snapshot on disk; -1 when there is none
	// base names the snapshot the projection was loaded from (baseOf), ""
	// once the view saved another: what an overlay of it goes over.
	base string
	// overlaid is the events in the snapshot and overlay on disk, as far
	// as this view knows (saved when it loaded none).
	overlaid int
	// damaged: the snapshot on disk failed its checksum and was not loaded.
	damaged bool
	// unusable: there was a snapshot on disk, not loaded (another format
	// or version, which an upgrade brings, or damaged), and none was saved
	// since.
	unusable bool
	body     int64 // where the state begins in the snapshot file (after its checkpoint line)
	// verified is, per writer, the stat of a file whose prefix this
	// process checksummed: until the marks are stamped with it, check
	// needs not checksum the same file again.
	verified map[string]stamp
}

// stamp is what a stat says of a writer file, to tell an untouched one.
type stamp struct {
	Inode       uint64
	Size, MTime int64
}

func stampOf(st fs.FileInfo) stamp {
	return stamp{Inode: durable.Inode(st), Size: st.Size(), MTime: st.ModTime().UnixNano()}
}

// checked reports whether this process checksummed writer w's prefix in
// the file as st finds it.
func (it *item) checked(w string, st fs.FileInfo) bool {
	v, ok := it.verified[w]
	return ok && v == stampOf(st)
}

// ErrUnknownProjection names a projection nobody registered.
var ErrUnknownProjection = errors.New("unknown projection")

// Open loads the named projections (all when none are named) from their
// snapshots; a missing or unreadable snapshot starts empty and is rebuilt.
func (en *Engine) Open(names ...string) (*View, error) {
	return en.open(true, names)
}

// open is Open; without load, every projection starts empty (Replay:
// decoding a snapshot only to drop it costs as much as a few projections).
func (en *Engine) open(load bool, names []string) (*View, error) {
	specs := en.Specs
	if len(names) > 0 {
		specs = nil
		for _, n := range names {
			s, ok := en.spec(n)
			if !ok {
				return nil, fmt.Errorf("%w: %s", ErrUnknownProjection, n)
			}
			specs = append(specs, s)
		}
	}
	v := &View{en: en}
	for _, s := range specs {
		it := &item{spec: s}
		if !load || !en.loadSnapshot(it) {
			it.reset()
		}
		v.items = append(v.items, it)
	}
	return v, nil
}

func (en *Engine) spec(name string) (Spec, bool) {
	for _, s := range en.Specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

func (it *item) reset() {
	it.verified = nil
	it.proj = it.spec.New()
	it.cp = Checkpoint{Format: checkpointFormat, Name: it.spec.Name, Version: it.spec.Version, Marks: map[string]Mark{}}
	it.dirty = true
	it.saved = -1
	it.base = ""
}

// Missing says whether some projection has no snapshot at all: a fresh
// clone, or the state directory removed.
func (en *Engine) Missing() bool {
	for _, s := range en.Specs {
		if _, err := os.Stat(en.snapshotPath(s.Name)); err != nil {
			return true
		}
	}
	return false
}

func (en *Engine) snapshotPath(name string) string {
	return filepath.Join(en.StateDir, name+".snap")
}

// Opener is a projection whose snapshot is read in part: it is handed the
// open file and where its state begins (after the checkpoint line) instead
// of the whole file, and keeps the file open as long as it reads from it
// (it closes it then).
type Opener interface {
	OpenState(f SnapshotFile, off, size int64) error
}

// CheckedUnmarshaler is a projection that reads a state whose checksum
// matched (what its MarshalState wrote) with less checking than any bytes
// need, such as lazily: the engine loads a snapshot so.
type CheckedUnmarshaler interface {
	UnmarshalChecked([]byte) error
}

// MappedUnmarshaler is a CheckedUnmarshaler that reads its state from the
// snapshot file mapped into memory rather than read into a fresh buffer:
// at 10,000 jobs reading the scheduler's snapshot took a millisecond of an
// 8 ms command, most of it the page faults of the buffer. Once it returns
// nil it owns the mapping: release unmaps it, when nothing reads b any
// more. On an error the engine releases it.
type MappedUnmarshaler interface {
	CheckedUnmarshaler
	UnmarshalMapped(b []byte, release func()) error
}

// SnapshotFile is an open snapshot file, as an Opener reads it.
type SnapshotFile interface {
	io.ReaderAt
	io.Closer
}

func (en *Engine) loadSnapshot(it *item) (loaded bool) {
	f, err := os.Open(en.snapshotPath(it.spec.Name))
	if err != nil {
		return false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
		it.unusable = !loaded
	}()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	head, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil {
		return false
	}
	var cp Checkpoint
	if json.Unmarshal(head, &cp) != nil || !cp.valid(it.spec) {
		return false
	}
	p := it.spec.New()
	if o, ok := p.(Opener); ok {
		if o.OpenState(f, int64(len(head)), st.Size()) != nil {
			return false
		}
		keep = true
	} else {
		var body []byte
		release := func() {}
		m, mapped := p.(MappedUnmarshaler)
		if mapped {
			var unmap func()
			if body, unmap = table.MapFile(f, int64(len(head)), st.Size()); body != nil {
				release = unmap
			}
			mapped = body != nil
		}
		if !mapped {
			body = make([]byte, st.Size()-int64(len(head)))
			if _, err := f.ReadAt(body, int64(len(head))); err != nil {
				return false
			}
		}
		if !sumMatches(cp.Sum, body) {
			release()
			it.damaged = true
			en.warn(fmt.Sprintf("%s does not match its checksum (changed by something other than spool): rebuilt from the log", en.snapshotPath(it.spec.Name)))
			return false
		}
		unmarshal := p.UnmarshalState
		if c, ok := p.(CheckedUnmarshaler); ok {
			unmarshal = c.UnmarshalChecked
		}
		if mapped {
			unmarshal = func(b []byte) error { return m.UnmarshalMapped(b, release) }
		}
		if unmarshal(body) != nil {
			release()
			return false
		}
	}
	it.proj, it.cp, it.saved, it.body = p, cp, cp.Events, int64(len(head))
	it.base, it.overlaid = baseOf(head), cp.Events
	en.loadOverlay(it)
	return true
}

// deferred reports whether an amortized projection may skip this save.
func (it *item) deferred() bool {
	return it.spec.Amortize > 0 && it.saved >= 0 && !it.restat && it.cp.Events-it.saved <= it.cp.Events/it.spec.Amortize
}

// Unusable says whether a projection of the view had a snapshot that was
// not loaded: another spool's format or version, or damaged. It is folded
// from the log's start, as one without a snapshot is.
func (v *View) Unusable() bool {
	for _, it := range v.items {
		if it.unusable {
			return true
		}
	}
	return false
}

// NeedsSave reports whether Save would write anything.
func (v *View) NeedsSave() bool {
	for _, it := range append(v.items, v.extras...) {
		if it.dirty && (!it.deferred() || it.overlayDue()) {
			return true
		}
	}
	return false
}

// As returns the named projection of the view as its type, and false when
// the view does not hold it (the command did not open it).
func As[T Projection](v *View, name string) (T, bool) {
	p, ok := v.Get(name).(T)
	return p, ok
}

// Get returns the named projection of the view.
func (v *View) Get(name string) Projection {
	for _, it := range v.items {
		if it.spec.Name == name {
			return it.proj
		}
	}
	return nil
}

// Events is how many events the first projection of the view has applied.
func (v *View) Events() int {
	if len(v.items) == 0 {
		return 0
	}
	return v.items[0].cp.Events
}

// Stale reports whether any projection is behind the log (or was never saved).
func (v *View) Stale() (bool, error) {
	for _, it := range v.items {
		if it.dirty || v.en.missingWorkTreeFile(it) {
			it.dirty = true // written again by the next save
			return true, nil
		}
		st, err := v.en.check(it)
		if err != nil {
			return false, err
		}
		if st != upToDate {
			return true, nil
		}
	}
	return false, nil
}

// WorkTreePaths is implemented by a projection with files in the work
// tree: their paths, relative to the root. Nothing keeps git from removing
// them (git clean -x, a checkout of a branch that tracked them), so a view
// that finds one missing writes them again.
type WorkTreePaths interface {
	WorkTreePaths() []string
}

func (en *Engine) missingWorkTreeFile(it *item) bool {
	wp, ok := it.proj.(WorkTreePaths)
	if !ok {
		return false
	}
	for _, p := range wp.WorkTreePaths() {
		full := en.FilePath(p, true)
		if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) && en.inWorkTree(full) {
			return true
		}
	}
	return false
}

type status int

const (
	upToDate  status = iota
	behind           // new bytes after the marks
	rewritten        // a file changed under a mark: rebuild
)

// check compares a checkpoint with the writer files on disk. A file spool
// appended to keeps its inode and grows; anything else (git checked it out
// or merged it, an editor or sed replaced it, it shrank, or it changed in
// place) must still begin with the bytes already applied, which the prefix
// checksum proves, or the projection is rebuilt from a full, checked read.
func (en *Engine) check(it *item) (status, error) {
	files, err := en.Log.Files()
	if err != nil {
		return 0, err
	}
	result := upToDate
	present := 0
	for _, path := range files {
		if _, ok := it.cp.Marks[eventlog.WriterOf(path)]; ok {
			present++
		}
	}
	if present < len(it.cp.Marks) {
		return rewritten, nil // a file that was applied is gone
	}
	for _, path := range files {
		m, ok := it.cp.Marks[eventlog.WriterOf(path)]
		if !ok {
			result = behind
			continue
		}
		st, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		w := eventlog.WriterOf(path)
		switch {
		case m.heldBy(st):
			if !lineMatches(path, m) {
				return rewritten, nil
			}
			if st.Size() > m.Size {
				result = behind
			}
		case it.checked(w, st):
			// Checksummed already (Stale, then CatchUp): unchanged since.
			if !lineMatches(path, m) {
				return rewritten, nil
			}
			result = behind
		default:
			ok, err := prefixMatches(path, m)
			if err != nil {
				return 0, err
			}
			if !ok {
				return rewritten, nil
			}
			// Nothing new, perhaps; either way the catch-up that follows
			// stamps the mark with the file's stat (taken before it reads),
			// and restat has it saved, so the next command takes a fast path.
			if it.verified == nil {
				it.verified = map[string]stamp{}
			}
			it.verified[w] = stampOf(st)
			it.restat = true
			result = behind
		}
	}
	return result, nil
}

// heldBy reports whether a file of this stat is the one m was taken of,
// unchanged or only grown (appends are all a writer file takes), as far as
// the stat tells: the same inode, and more bytes or the same bytes at the
// same time. The line before m.Offset is for lineMatches to check.
func (m Mark) heldBy(st os.FileInfo) bool {
	return durable.Inode(st) == m.Inode && (st.Size() > m.Size || st.Size() == m.Size && st.ModTime().UnixNano() == m.MTime)
}

// lineMatches checks that the line before m.Offset is still the one applied.
func lineMatches(path string, m Mark) bool {
	if m.Offset == 0 {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return eventlog.LineAt(f, m.start())
}

// prefixChecks counts the prefix checksums computed, for tests.
var prefixChecks atomic.Int64

// prefixMatches checks that the file still begins with the bytes applied.
func prefixMatches(path string, m Mark) (bool, error) {
	prefixChecks.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	crc, err := eventlog.PrefixCRC(f, m.Offset)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return false, nil
	}
	return err == nil && crc == m.Prefix && lineMatches(path, m), err
}

// CatchUp applies events appended since the snapshots were taken, rebuilding
// a projection from scratch when its files were rewritten or when merged
// events sort before what it already applied. It reports whether anything changed.
func (v *View) CatchUp(ctx context.Context) (bool, error) {
	return v.catchUp(ctx, v.items...)
}

func (v *View) catchUp(ctx context.Context, items ...*item) (bool, error) {
	var incremental, rebuild []*item
	for _, it := range items {
		if it.saved < 0 && it.cp.Events == 0 {
			rebuild = append(rebuild, it) // no snapshot: a fresh clone, say
			continue
		}
		st, err := v.en.check(it)
		if err != nil {
			return false, err
		}
		switch st {
		case rewritten:
			it.reset()
			rebuild = append(rebuild, it)
		case behind:
			incremental = append(incremental, it)
		}
	}
	if len(incremental) > 0 {
		needRebuild, err := v.en.apply(ctx, incremental, false, nil)
		if err != nil {
			return false, err
		}
		for _, it := range needRebuild {
			it.reset()
			rebuild = append(rebuild, it)
		}
	}
	if len(rebuild) > 0 {
		extras, err := v.staleOthers()
		if err != nil {
			return false, err
		}
		v.extras = append(v.extras, extras...)
		if _, err := v.en.apply(ctx, append(rebuild, extras...), true, nil); err != nil {
			return false, err
		}
	}
	changed := false
	for _, it := range v.items {
		changed = changed || it.dirty
	}
	return changed, nil
}

// staleOthers returns, reset, the projections outside the view (and not
// already among its extras) that a catch-up would rebuild from scratch: no
// usable snapshot, or a file rewritten under their marks.
func (v *View) staleOthers() ([]*item, error) {
	var out []*item
	for _, s := range v.en.Specs {
		if v.has(s.Name) {
			continue
		}
		it := &item{spec: s}
		cp, ok := v.en.peekCheckpoint(s)
		if ok {
			it.cp = cp
			st, err := v.en.check(it)
			if err != nil {
				return nil, err
			}
			if st != rewritten {
				continue
			}
		}
		it.reset()
		out = append(out, it)
	}
	return out, nil
}

func (v *View) has(name string) bool {
	for _, it := range append(v.items, v.extras...) {
		if it.spec.Name == name {
			return true
		}
	}
	return false
}

// peekCheckpoint reads only the checkpoint line of a snapshot.
func (en *Engine) peekCheckpoint(s Spec) (Checkpoint, bool) {
	var cp Checkpoint
	head, ok := en.snapshotHead(s.Name)
	return cp, ok && json.Unmarshal(head, &cp) == nil && cp.valid(s)
}

// snapshotHead is the checkpoint line of a snapshot, its newline included.
func (en *Engine) snapshotHead(name string) ([]byte, bool) {
	f, err := os.Open(en.snapshotPath(name))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	head, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	return head, err == nil
}

// KnownStarts is, for each writer file, where the latest snapshot's
// checkpoint says its applied lines end, with their count and checksum:
// a reader of a file's end (eventlog.Log.Last) counts from there rather
// than from the beginning. Only a mark the file holds as a catch-up trusts
// it (heldBy, lineMatches: the same file grown, or unchanged since, its
// last applied line there) is given.
func (en *Engine) KnownStarts() map[string]eventlog.Start {
	var best Checkpoint
	for _, s := range en.Specs {
		if cp, ok := en.peekCheckpoint(s); ok && cp.Events > best.Events {
			best = cp
		}
	}
	files, err := en.Log.Files()
	if err != nil || len(best.Marks) == 0 {
		return nil
	}
	out := map[string]eventlog.Start{}
	for _, path := range files {
		w := eventlog.WriterOf(path)
		m, ok := best.Marks[w]
		if !ok {
			continue
		}
		if st, err := os.Stat(path); err == nil && m.heldBy(st) && lineMatches(path, m) {
			out[w] = m.start()
		}
	}
	return out
}

func (cp Checkpoint) valid(s Spec) bool {
	return cp.Format == checkpointFormat && cp.Name == s.Name && cp.Version == s.Version && cp.Marks != nil
}

// readInfo is what a read of the log met besides events.
type readInfo struct {
	events  int      // events read
	files   int      // writer files read
	torn    []string // files ending in a torn tail or an unfinished batch
	dropped int      // lines dropped as copies of the line before
}

// apply reads the log once for items and folds new events into them. An item
// that meets an event sorting before its last applied one is returned for a
// rebuild. info, when not nil, is filled in when the read ends without error.
func (en *Engine) apply(ctx context.Context, items []*item, fromScratch bool, info *readInfo) ([]*item, error) {
	from := map[string]eventlog.Start{}
	if !fromScratch {
		// Start at the smallest mark of any item.
		files, err := en.Log.Files()
		if err != nil {
			return nil, err
		}
		for _, path := range files {
			w := eventlog.WriterOf(path)
			first := true
			for _, it := range items {
				m := it.cp.Marks[w]
				if first || m.Offset < from[w].Offset {
					from[w] = m.start()
					first = false
				}
			}
		}
	}
	// Stat before reading: git may add lines while the log is read (it does
	// not take spool's lock), and a stat taken after the read would record
	// them as applied.
	stats, err := statFiles(en.Log)
	if err != nil {
		return nil, err
	}
	read := en.Log.Read
	if info != nil {
		read = en.Log.ReadQuiet // the caller reports dropped lines (verify)
	}
	r, err := read(from)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	live := append([]*item(nil), items...)
	liveK := make([]int, len(items)) // live[i] is items[liveK[i]]
	for k := range liveK {
		liveK[k] = k
	}
	var broken []*item
	applied := 0
	// The marks, per item and writer, are kept in slices while the log is
	// read (a map write per projection per event is a good part of the
	// engine's own cost) and written back when the read ends, however it ends.
	cur := newMarkTable(items)
	defer cur.store()
	for len(live) > 0 {
		e, pos, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if applied%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		w := cur.writer(pos.Writer)
		folded, usable := Usable(e)
		for i := 0; i < len(live); i++ {
			it := live[i]
			m := &cur.marks[liveK[i]][w]
			if m.seen && pos.Offset <= m.Offset {
				continue // applied before
			}
			if it.cp.Events > 0 && !it.cp.Last.before(e) {
				if fromScratch {
					// Each file is checked to be in order, so a full read is:
					// a projection must never stop short of the log.
					return nil, &eventlog.LineError{Path: pos.Path, Line: pos.Line,
						Err: fmt.Errorf("%w: event %s sorts before %v, applied already", eventlog.ErrCorrupt, e.ID, it.cp.Last)}
				}
				broken = append(broken, it)
				live = append(live[:i], live[i+1:]...)
				liveK = append(liveK[:i], liveK[i+1:]...)
				i--
				continue
			}
			if !usable {
				// skipped by every projection, its place still marked
			} else if err := it.proj.Apply(folded); err != nil {
				return nil, fmt.Errorf("%s: apply %s (%s:%d): %w", it.spec.Name, e.Type, pos.Path, pos.Line, err)
			}
			it.cp.Events++
			it.cp.Last = keyOf(e)
			// The file's size, mtime and inode stay until they are read below.
			m.Offset, m.Line, m.Len, m.CRC, m.Prefix = pos.Offset, pos.Line, pos.Len, pos.CRC, pos.Prefix
			m.seen, m.changed = true, true
			it.dirty = true
		}
		applied++
		if fromScratch && en.Progress != nil && applied%progressEvery == 0 {
			en.Progress(applied, false)
		}
	}
	if fromScratch && en.Progress != nil {
		en.Progress(applied, true)
	}
	cur.store()
	if info != nil {
		*info = readInfo{events: applied, files: r.Files(), torn: r.Torn(), dropped: r.Dropped()}
	}
	// Record size, mtime and inode so an untouched file is recognised by a stat.
	for w, st := range stats {
		for _, it := range live {
			m := it.cp.Marks[w]
			if m.Size != st.Size() || m.MTime != st.ModTime().UnixNano() || m.Inode != durable.Inode(st) {
				if m.Inode != 0 && m.Inode != durable.Inode(st) {
					it.restat = true // a replaced file: save, or every command checks its prefix again
				}
				m.Size, m.MTime, m.Inode = st.Size(), st.ModTime().UnixNano(), durable.Inode(st)
				it.cp.Marks[w] = m
				it.dirty = true
			}
		}
	}
	return broken, nil
}

// markTable holds the marks of items while apply reads the log: per item,
// one per writer met, in the order writers are met.
type markTable struct {
	items   []*item
	writers []string
	marks   [][]tableMark // [item][writer]
	last    string        // the writer of the last event, and its index
	lastIdx int
}

type tableMark struct {
	Mark
	seen    bool // the checkpoint has a mark for the writer
	changed bool // an event was applied since the table was made
}

func newMarkTable(items []*item) *markTable {
	return &markTable{items: items, marks: make([][]tableMark, len(items)), lastIdx: -1}
}

// writer returns w's index, adding it the first time.
func (t *markTable) writer(w string) int {
	if t.lastIdx >= 0 && w == t.last {
		return t.lastIdx
	}
	i := slices.Index(t.writers, w)
	if i < 0 {
		i = len(t.writers)
		t.writers = append(t.writers, w)
		for k, it := range t.items {
			m, seen := it.cp.Marks[w]
			t.marks[k] = append(t.marks[k], tableMark{Mark: m, seen: seen})
		}
	}
	t.last, t.lastIdx = w, i
	return i
}

// store writes the changed marks back into the checkpoints; a second call
// writes nothing.
func (t *markTable) store() {
	for k, it := range t.items {
		for w := range t.marks[k] {
			if m := &t.marks[k][w]; m.changed {
				it.cp.Marks[t.writers[w]] = m.Mark
				m.changed = false
			}
		}
	}
}

func statFiles(l *eventlog.Log) (map[string]fs.FileInfo, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	stats := make(map[string]fs.FileInfo, len(files))
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		stats[eventlog.WriterOf(path)] = st
	}
	return stats, nil
}

// Save writes the public files and snapshots of changed projections.
// The caller holds the log's lock.
func (v *View) Save() error {
	tmp := v.en.tmpDir()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	sweep(tmp)
	// Public files before the snapshot: a crash between the two only makes
	// the next command apply the same events again to the old snapshot.
	batch := durable.NewBatch(tmp)
	var saved []*item
	for _, it := range append(v.items, v.extras...) {
		if !it.dirty {
			continue
		}
		if it.deferred() {
			if it.overlayDue() {
				if err := v.en.writeOverlay(it, tmp); err != nil {
					return fmt.Errorf("overlay %s: %w", it.spec.Name, err)
				}
			}
			continue
		}
		// Files and snapshot are streamed to disk (a FileWriter's and a
		// StateWriter's never whole in memory).
		files := func() error {
			return eachFile(it.spec.Name, it.proj, func(path string, workTree bool, write func(io.Writer) error) error {
				full := v.en.FilePath(path, workTree)
				if !workTree {
					return batch.WriteStream(full, 0o644, write, nil)
				}
				if !v.en.inWorkTree(full) {
					return nil // a link leads it outside: see inWorkTree
				}
				// A work-tree file is rewritten only when its bytes change: git
				// and editors see no churn, and the work tree stays clean.
				same, err := compareWith(full)
				if err != nil {
					return err
				}
				defer same.Close()
				return batch.WriteStream(full, 0o644, func(w io.Writer) error {
					return write(io.MultiWriter(w, same))
				}, func() bool {
					_, equal, _, err := same.result()
					return err == nil && equal
				})
			})
		}
		// A state loaded whole is encoded first, for its checksum to go in
		// the checkpoint line before it.
		var state []byte
		it.cp.Sum = ""
		if _, opened := it.proj.(Opener); !opened {
			var err error
			if _, streamed := it.proj.(StateWriter); streamed {
				it.cp.Sum, err = streamSum(it.spec.Name, it.proj, tmp) // a pass to hash, one to write: never whole
			} else if state, err = it.proj.MarshalState(); err == nil {
				it.cp.Sum = bodySum(state)
			}
			if err != nil {
				return fmt.Errorf("marshal %s: %w", it.spec.Name, err)
			}
		}
		head, err := json.Marshal(it.cp)
		if err != nil {
			return err
		}
		// A Freezer's files are written while its snapshot is: the largest
		// state's two halves (190 MB of tasks.json, 90 MB of table at
		// 100,000 tasks) each take a core. The snapshot still replaces the
		// old one last, once the files are in place.
		filesDone := alongside(v.en.OnLargeSave, it.proj, files)
		if _, frozen := it.proj.(Freezer); !frozen {
			if err := filesDone(); err != nil {
				return err
			}
		}
		err = batch.WriteStream(v.en.snapshotPath(it.spec.Name), 0o644, func(w io.Writer) error {
			_, err := w.Write(append(head, '\n'))
			switch {
			case err == nil && state != nil:
				_, err = w.Write(state)
			case err == nil:
				err = writeState(it.spec.Name, it.proj, w, tmp)
			}
			return cmp.Or(filesDone(), err)
		}, nil)
		if err := cmp.Or(filesDone(), err); err != nil {
			return err
		}
		it.dirty, it.restat, it.unusable = false, false, false
		it.saved, it.overlaid, it.base = it.cp.Events, it.cp.Events, ""
		saved = append(saved, it)
	}
	if err := batch.Done(); err != nil {
		return err
	}
	for _, it := range saved {
		if err := v.en.dropOverlay(it); err != nil {
			return err
		}
	}
	v.extras = nil // saved: the next command loads them from their snapshots
	return nil
}

// tmpDir is where saves write their files before they are renamed into
// place, and where a projection gathers what it writes in parts.
func (en *Engine) tmpDir() string { return filepath.Join(en.StateDir, ".tmp") }

// sweep removes temp files a crashed writer left; the caller holds the lock,
// so no live writer owns any of them.
func sweep(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		os.Remove(filepath.Join(tmp, e.Name()))
	}
}

// Rebuild folds the whole log into fresh projections and saves them; it
// returns how many events it applied. Unlike Replay's, its state is not
// for deciding on: a Spiller's is on disk (SpillDir).
func (en *Engine) Rebuild(ctx context.Context) (events int, err error) {
	v, err := en.fold(ctx, nil, true, nil)
	if err != nil {
		return 0, err
	}
	return v.Events(), v.Save()
}

// Replay folds the whole log into fresh projections in memory.
func (en *Engine) Replay(ctx context.Context, names ...string) (*View, error) {
	return en.fold(ctx, names, false, nil)
}

// fold folds the whole log into fresh projections. With spill (a state
// nobody decides on) and a SpillDir, the Spillers keep their bulk there.
func (en *Engine) fold(ctx context.Context, names []string, spill bool, info *readInfo) (*View, error) {
	v, err := en.open(false, names)
	if err != nil {
		return nil, err
	}
	for _, it := range v.items {
		if sp, ok := it.proj.(Spiller); ok && spill && en.SpillDir != "" {
			if err := sp.Spill(en.SpillDir); err != nil {
				return nil, fmt.Errorf("%s: %w", it.spec.Name, err)
			}
		}
	}
	if _, err := en.apply(ctx, v.items, true, info); err != nil {
		return nil, err
	}
	return v, nil
}
