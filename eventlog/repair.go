package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spoolhq/spool/internal/durable"
)

// FileRepair is what Repair did to one writer file, or could not do.
type FileRepair struct {
	Path   string   `json:"file"`
	Backup string   `json:"backup,omitempty"` // the file as it was, when it was rewritten
	Fixed  []string `json:"fixed"`
	Left   []string `json:"left"` // problems only a person can fix; the file is left as it was
}

// Repair fixes, under the lock, what can be fixed without losing or
// altering an acknowledged event: a torn tail or an unfinished batch (never
// acknowledged), exact copies of a line, and lines out of order whose ids
// all check and that are a writer file merged without the merge driver,
// both sides kept (the shared lines, then each side's own lines in turn,
// each side without a gap), which are put in order as the merge driver
// would. Each rewritten file is first copied to <private dir>/repair/<time>/.
// A file with a line that does not parse or is longer than MaxLine, an
// edited line, a missing seq or lines out of order in another arrangement
// is left untouched and reported. Files with nothing to fix are not listed.
func (l *Log) Repair(ctx context.Context, now time.Time) ([]FileRepair, error) {
	unlock, err := l.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	backups := filepath.Join(l.opt.PrivateDir, "repair", strconv.FormatInt(now.UnixNano(), 10))
	var out []FileRepair
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return out, err
		}
		fixed, rep := repairLines(b, WriterOf(path))
		rep.Path = path
		if len(rep.Fixed) == 0 && len(rep.Left) == 0 {
			continue
		}
		if len(rep.Left) == 0 {
			if err := os.MkdirAll(backups, 0o755); err != nil {
				return out, err
			}
			rep.Backup = filepath.Join(backups, filepath.Base(path))
			if err := durable.WriteFile(rep.Backup, b, 0o644); err != nil {
				return out, fmt.Errorf("back up %s: %w", path, err)
			}
			if err := durable.WriteFile(path, fixed, 0o644); err != nil {
				return out, fmt.Errorf("write %s: %w", path, err)
			}
		}
		out = append(out, rep)
	}
	return out, nil
}

// line is one line of a file being repaired: its bytes, event and number.
type line struct {
	raw []byte
	e   *Event
	sp  spans
	n   int
}

// repairLines returns the repaired content of one writer file and what was
// done; with anything in Left the content must not be used.
func repairLines(b []byte, writer string) ([]byte, FileRepair) {
	rep := FileRepair{Fixed: []string{}, Left: []string{}}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		rep.Fixed = append(rep.Fixed, fmt.Sprintf("removed a torn tail of %d bytes (never acknowledged)", len(b)-i-1))
		b = b[:i+1]
	}
	var lines []line
	seen := map[string]bool{} // lines kept, by their bytes
	var copies []int
	r := newRules(writer)
	for n, raw := range bytes.SplitAfter(b, []byte{'\n'}) {
		if len(raw) == 0 {
			continue
		}
		if len(raw) > MaxLine {
			// Whatever it holds, no reader takes it: keeping it would leave the file unreadable.
			rep.Left = append(rep.Left, fmt.Sprintf("line %d: %d bytes, longer than %d: no reader takes it", n+1, len(raw), MaxLine))
			continue
		}
		e, sp, err := decode(raw)
		if err != nil {
			rep.Left = append(rep.Left, fmt.Sprintf("line %d: %v", n+1, err))
			continue
		}
		if seen[string(raw)] {
			copies = append(copies, n+1)
			continue
		}
		seen[string(raw)] = true
		switch {
		case e.Writer != writer:
			rep.Left = append(rep.Left, fmt.Sprintf("line %d: writer %q in the file of writer %q", n+1, e.Writer, writer))
		case !r.idMatches(raw, e, sp):
			rep.Left = append(rep.Left, fmt.Sprintf("line %d: id %s does not match the content: the line was edited", n+1, e.ID))
		}
		lines = append(lines, line{raw, e, sp, n + 1})
	}
	if len(copies) > 0 {
		rep.Fixed = append(rep.Fixed, fmt.Sprintf("dropped %d exact copies of other lines (lines %s)", len(copies), joinInts(copies)))
	}
	k := len(lines)
	for k > 0 && lines[k-1].e.More {
		k--
	}
	if k < len(lines) {
		rep.Fixed = append(rep.Fixed, fmt.Sprintf("removed %d lines of an append that never finished (never acknowledged)", len(lines)-k))
		lines = lines[:k]
	}
	if len(rep.Left) > 0 {
		return nil, rep
	}
	var out bytes.Buffer
	inOrder := true
	r = newRules(writer)
	for _, l := range lines {
		out.Write(l.raw)
		if r.check(l.raw, l.e, l.sp, l.n) != nil {
			inOrder = false
		}
	}
	if inOrder {
		return out.Bytes(), rep
	}
	// Out of order: safe to put in order only if no seq is missing (a
	// missing seq is a deleted line, whose event only git still has).
	have := map[uint64]bool{}
	var top uint64
	chained := false
	for _, l := range lines {
		have[l.e.Seq] = true
		top = max(top, l.e.Seq)
		chained = chained || l.e.Prev != ""
	}
	for seq := uint64(1); seq <= top; seq++ {
		if !have[seq] {
			rep.Left = append(rep.Left, fmt.Sprintf("seq %d is missing: a line was deleted; restore it from git (git log -p -- FILE)", seq))
			return nil, rep
		}
	}
	if chained {
		return chainOrder(lines, writer, rep)
	}
	// Every seq is there, but a seq one side lost may be held by another
	// side's line. So the file must also be what git leaves when it merges
	// without the driver and keeps both sides: the lines all sides share
	// (seq 1 to b), then each side's own lines, one side after the other,
	// each running from seq b+1 without a gap. Split into runs of lines that
	// follow one another by the rules, that is: a first run from seq 1, and
	// every other run from seq b+1, after the first run's line b. (Then the
	// count of lines per seq never grows after b.) A deleted line that
	// ended a side, or began the second side in the file, still looks like
	// a merge (one that forked where it did, or a line later): nothing in
	// the file tells them apart.
	r = newRules(writer)
	var fork *line // the first run's line b, nil while b is unknown
	for i := range lines {
		l := &lines[i]
		if i > 0 && r.check(l.raw, l.e, l.sp, l.n) == nil {
			continue
		}
		r = newRules(writer)
		r.accept(l.e, l.n)
		ok := false
		switch {
		case i == 0:
			ok = l.e.Seq == 1
		case fork == nil && l.e.Seq == 1:
			ok, fork = true, &line{e: &Event{}} // the sides share no line
		case fork == nil:
			for j := range lines[:i] {
				if lines[j].e.Seq == l.e.Seq-1 {
					fork = &lines[j] // the first run is contiguous from seq 1: j is in it
					break
				}
			}
			ok = fork != nil && sortsBefore(fork.e, l.e)
		default:
			ok = l.e.Seq == fork.e.Seq+1 && sortsBefore(fork.e, l.e)
		}
		if !ok {
			after := "begins the file"
			if i > 0 {
				after = fmt.Sprintf("follows seq %d", lines[i-1].e.Seq)
			}
			rep.Left = append(rep.Left, fmt.Sprintf("line %d: seq %d %s, and the file is not the sides of one merge, "+
				"each whole: a line may have been deleted; restore it from git (git log -p -- FILE)", l.n, l.e.Seq, after))
			return nil, rep
		}
	}
	union, err := Union(out.Bytes(), nil)
	if err != nil {
		rep.Left = append(rep.Left, err.Error())
		return nil, rep
	}
	rep.Fixed = append(rep.Fixed, fmt.Sprintf("put %d lines in order as the merge driver would (seq renumbered, ids unchanged)", len(lines)))
	return union, rep
}

// chainOrder puts lines that carry prev in the order of their chain, which
// the ids pin: the lines without prev first, as they are (an older spool's,
// then the first line of the chain), then, from the last of them, each line
// whose prev is the id of the one before. The result must then keep every
// rule; a chain with a gap (a deleted line) or a fork (two lines naming one
// prev: two machines writing as one writer) is left for a person.
func chainOrder(lines []line, writer string, rep FileRepair) ([]byte, FileRepair) {
	next := map[string]int{} // prev → index
	var order []int
	for i, l := range lines {
		e := l.e
		if e.Prev == "" {
			order = append(order, i)
			continue
		}
		if j, dup := next[e.Prev]; dup {
			rep.Left = append(rep.Left, fmt.Sprintf("events %s and %s both follow %s: the file forked (two copies of one clone wrote as this writer?); "+
				"restore it from git (git log -p -- FILE)", lines[j].e.ID, e.ID, e.Prev))
			return nil, rep
		}
		next[e.Prev] = i
	}
	last := ""
	if len(order) > 0 {
		last = lines[order[len(order)-1]].e.ID
	}
	for len(order) < len(lines) {
		i, ok := next[last]
		if !ok {
			rep.Left = append(rep.Left, fmt.Sprintf("no line follows %s in the chain of prev, yet %d lines are not placed: a line was deleted; "+
				"restore it from git (git log -p -- FILE)", last, len(lines)-len(order)))
			return nil, rep
		}
		order = append(order, i)
		last = lines[i].e.ID
	}
	var out bytes.Buffer
	r := newRules(writer)
	for n, i := range order {
		l := lines[i]
		if b := r.check(l.raw, l.e, l.sp, n+1); b != nil {
			rep.Left = append(rep.Left, fmt.Sprintf("line %d, in the order of the chain of prev: %s; restore the file from git (git log -p -- FILE)", l.n, b.msg))
			return nil, rep
		}
		out.Write(l.raw)
	}
	rep.Fixed = append(rep.Fixed, fmt.Sprintf("put %d lines in the order of their chain of prev (ids and seq unchanged)", len(lines)))
	return out.Bytes(), rep
}

// sortsBefore reports whether a comes before b in a writer file's (lc, id) order.
func sortsBefore(a, b *Event) bool {
	return a.LC < b.LC || a.LC == b.LC && a.ID < b.ID
}

func joinInts(ns []int) string {
	var b []byte
	for i, n := range ns {
		if i > 0 {
			b = append(b, ", "...)
		}
		if i == 8 {
			return string(append(b, "…"...))
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}
