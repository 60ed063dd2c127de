package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spoolhq/spool/internal/durable"
)

// Received is what Receive did with one copy of a writer file.
type Received struct {
	Writer string `json:"writer"`
	Added  int    `json:"added"` // events new to this log
	// Quarantined is where a copy that breaks the log's rules, or that lost
	// or changed a line the local file has, was kept aside instead of being
	// folded; Problem says why.
	Quarantined string `json:"quarantined,omitempty"`
	Problem     string `json:"problem,omitempty"`
	// Forked is a quarantined copy that is not an extension of the local
	// file (else the local file is a prefix of it): a sync must not let
	// either replace the other unseen.
	Forked bool `json:"forked,omitempty"`
	// Broken is a quarantined copy that breaks the log's rules (or is no
	// file at all): no spool wrote it as this writer's.
	Broken bool `json:"broken,omitempty"`
	// Same says the local file is now the copy byte for byte (ReceiveFrom
	// only): its blob, for a cache that knows files by their blobs.
	Same bool `json:"-"`
	// Held says the local file now begins with the copy byte for byte
	// (ReceiveFrom and ReceiveFromKnown only; Same, or the copy was a
	// prefix of it): the file grown from that blob, for a receive that
	// knows the parts it holds.
	Held bool `json:"-"`
}

// Whole cuts a writer file to whole batches: a torn last line, or the lines
// of an append that never finished (More on the last line), are left for
// their writer to repair.
func Whole(b []byte) []byte {
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	for len(b) > 0 {
		i := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		e, err := Decode(b[i:])
		if err != nil || !e.More {
			return b
		}
		b = b[:i]
	}
	return b
}

// Receive brings into the log a copy of writer file name that arrived from
// elsewhere (source: the sync branch of a remote, a checked-out tree), under
// the session's lock. Only whole batches count. A copy that extends the
// local file is appended to it; one the local file extends adds nothing.
// A writer file only grows: a copy that neither extends the local file nor
// is a prefix of it lost or changed a line, and is refused unless neither
// holds a chained line (prev): the old layout, where the same writer
// appended on two branches, whose copies are unioned by event id as the
// merge driver does. A refused copy, and one that breaks the log's rules,
// is kept aside under quarantine/ and nothing of it is folded, so one bad
// file never stops anyone's work. No event the log has is ever dropped or
// changed, least of all this clone's own.
func (s *Session) Receive(name string, theirs []byte, source string) (Received, error) {
	writer, ok := cutWriter(name)
	if !ok {
		return Received{}, fmt.Errorf("%w: %q from %s is not a writer file's name", ErrCorrupt, name, source)
	}
	res := Received{Writer: writer}
	theirs = Whole(theirs)
	if len(theirs) == 0 {
		return res, nil
	}
	path := filepath.Join(s.log.opt.Dir, name)
	ours, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	if bytes.HasPrefix(ours, theirs) {
		return res, nil // nothing new: the common case, checked before the rules
	}
	rep := &CheckReport{}
	if err := checkLines(bytes.NewReader(theirs), path, rep); err != nil {
		return res, err
	}
	if len(rep.Problems) > 0 && !Chained(theirs) {
		// An older spool's copy that git merged without the driver holds
		// both sides' lines one after the other: put in order as doctor
		// --repair would, it keeps the rules.
		if fixed, r := repairLines(theirs, writer); len(r.Left) == 0 {
			theirs, rep = fixed, &CheckReport{}
			if err := checkLines(bytes.NewReader(theirs), path, rep); err != nil {
				return res, err
			}
			if bytes.HasPrefix(ours, theirs) {
				return res, nil
			}
		}
	}
	extends := bytes.HasPrefix(theirs, ours)
	res.Forked = !extends
	if len(rep.Problems) > 0 {
		p := rep.Problems[0]
		res.Problem, res.Broken = fmt.Sprintf("line %d: %s", p.Line, p.Message), true
		res.Quarantined, err = s.log.quarantine(writer, theirs, source, res.Problem)
		return res, err
	}
	if !extends && !Chained(theirs) && holdsAll(ours, theirs) {
		// An older spool's copy whose events are all here, in another
		// order or with seq renumbered (the old layout's branches, after
		// the union that brought them in): nothing new.
		return res, nil
	}
	if !extends && (Chained(ours) || Chained(theirs)) {
		res.Problem = s.forkProblem(writer, ours, theirs)
		res.Quarantined, err = s.log.quarantine(writer, theirs, source, res.Problem)
		return res, err
	}
	switch {
	case extends:
		err = appendLines(path, s.log.opt.Dir, theirs[len(ours):])
	default:
		var merged []byte
		if merged, err = Union(ours, theirs); err != nil {
			return res, fmt.Errorf("%s from %s: %w", name, source, err)
		}
		if bytes.Equal(merged, ours) {
			return res, nil
		}
		theirs = merged
		if err = os.MkdirAll(s.log.tmpDir(), 0o755); err == nil {
			err = durable.WriteFileIn(path, merged, 0o644, s.log.tmpDir())
		}
	}
	if err != nil {
		return res, err
	}
	res.Added = bytes.Count(theirs, newline) - bytes.Count(ours, newline)
	return res, s.Reload() // tails, seq and lc changed, perhaps this writer's own file
}

// Unreadable keeps aside a copy of writer file name that could not be read
// as a file at all (problem says why: a tree of parts as spool never
// writes one), as Receive keeps aside one that breaks the log's rules:
// quarantined, with nothing of it folded, so that it stops no one's work.
func (s *Session) Unreadable(name, source, problem string) (Received, error) {
	writer, ok := cutWriter(name)
	if !ok {
		return Received{}, fmt.Errorf("%w: %q from %s is not a writer file's name", ErrCorrupt, name, source)
	}
	res := Received{Writer: writer, Problem: problem, Forked: true, Broken: true}
	var err error
	// What is kept aside is why, which names the tree: there is no copy.
	res.Quarantined, err = s.log.quarantine(writer, []byte(problem+"\n"), source, problem)
	return res, err
}

// cutWriter is the writer of writer file name, ok when name is one.
func cutWriter(name string) (string, bool) {
	writer, ok := strings.CutSuffix(name, Ext)
	return writer, ok && ValidWriter(writer)
}

// Chained reports whether a writer file holds a line with prev (this
// spool's files do from their second line on; an older spool's never do).
func Chained(b []byte) bool {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		if e, err := Decode(b[:i]); err == nil && e.Prev != "" {
			return true
		}
		b = b[min(i+1, len(b)):]
	}
	return false
}

// holdsAll says whether every event of writer file b is in writer file a.
func holdsAll(a, b []byte) bool {
	have := map[string]bool{}
	for _, line := range bytes.SplitAfter(a, newline) {
		if e, err := Decode(line); err == nil {
			have[e.ID] = true
		}
	}
	for _, line := range bytes.SplitAfter(b, newline) {
		if e, err := Decode(line); err == nil && !have[e.ID] {
			return false
		}
	}
	return true
}

// forkProblem says how a copy that is not an extension of the local file
// differs from it, and what to do.
func (s *Session) forkProblem(writer string, ours, theirs []byte) string {
	n, here, there := FirstDifference(ours, theirs)
	at := fmt.Sprintf("line %d differs from this clone's copy (here %s, there %s)", n, here, there)
	if writer == s.writer {
		return at + ": this is this clone's own file, changed elsewhere; spool never takes its own events back changed or removed " +
			"(if this clone's files were copied to another machine, both write as writer " + writer + ": run spool doctor --repair on one of them to give it a new writer id)"
	}
	return at + ": the copy lost or changed a line this clone has (a rewritten history: this clone keeps the original, and the writer's " +
		"next spool sync puts it back), or two machines write as writer " + writer + " (a copied clone: one of them must take a new writer id with spool doctor --repair)"
}

// FirstDifference is the first line (1, 2, …) at which two writer files
// differ and what each has there: "event <id>", or "nothing".
func FirstDifference(a, b []byte) (line int, inA, inB string) {
	n := 1
	for {
		i, j := bytes.IndexByte(a, '\n'), bytes.IndexByte(b, '\n')
		if i < 0 || j < 0 || !bytes.Equal(a[:i], b[:j]) {
			return n, lineID(a, i), lineID(b, j)
		}
		a, b, n = a[i+1:], b[j+1:], n+1
	}
}

func lineID(b []byte, end int) string {
	if end < 0 {
		return "nothing"
	}
	if e, err := Decode(b[:end]); err == nil {
		return "event " + e.ID
	}
	return "a line that does not parse"
}

// appendLines appends lines to path, creating it (and syncing dir) if new.
func appendLines(path, dir string, lines []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(lines)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		err = durable.SyncDir(dir)
	}
	return err
}

// tmpDir is where whole-file rewrites of the log are staged: beside it, on
// the same file system, never read as part of it.
func (l *Log) tmpDir() string { return filepath.Join(l.opt.PrivateDir, "tmp") }

// QuarantineDir holds copies of writer files that arrived breaking the
// log's rules.
func (l *Log) QuarantineDir() string { return filepath.Join(l.opt.PrivateDir, "quarantine") }

// quarantine keeps a refused copy aside, named by writer and content, with
// a note of where it came from and why; the same copy is kept once.
func (l *Log) quarantine(writer string, content []byte, source, problem string) (string, error) {
	sum := sha256.Sum256(content)
	base := filepath.Join(l.QuarantineDir(), writer+"."+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(base + Ext); err == nil {
		return base + Ext, nil
	}
	if err := os.MkdirAll(l.QuarantineDir(), 0o755); err != nil {
		return "", err
	}
	note := fmt.Sprintf("source: %s\nproblem: %s\n", source, problem)
	if err := durable.WriteFile(base+".why", []byte(note), 0o644); err != nil {
		return "", err
	}
	if err := durable.WriteFile(base+Ext, content, 0o644); err != nil {
		return "", err
	}
	l.warnText(fmt.Sprintf("quarantined %s's events from %s (%s): kept aside in %s, not folded; spool doctor says what to do", writer, source, problem, base+Ext))
	return base + Ext, nil
}

// Quarantined lists the copies kept aside, sorted.
func (l *Log) Quarantined() ([]string, error) {
	entries, err := os.ReadDir(l.QuarantineDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), Ext) {
			out = append(out, filepath.Join(l.QuarantineDir(), e.Name()))
		}
	}
	sort.Strings(out)
	return out, err
}
