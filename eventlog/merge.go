package eventlog

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
)

// Union merges two versions of one writer file, as git's merge driver does
// when the same writer appended on two branches of the old layout: every
// event of either side is kept once (by id), ordered by (lc, id), and seq is
// renumbered from 1 so the file stays contiguous. Lines are kept byte for
// byte (fields a newer spool added survive) except for a renumbered seq. Ids
// leave seq out, so renumbering keeps them, and any two clones that union
// the same events produce the same bytes. Lines with prev are not unioned
// into a file their chain does not run through: sides that forked there
// are ErrForked (one side is a prefix of the other, or both are unchained).
func Union(ours, theirs []byte) ([]byte, error) {
	type line struct {
		e   *Event
		raw []byte
	}
	byID := map[string]line{}
	for side, data := range [][]byte{ours, theirs} {
		var lines []line
		for n, raw := range bytes.SplitAfter(data, []byte{'\n'}) {
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			e, err := Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", [2]string{"ours", "theirs"}[side], n+1, err)
			}
			lines = append(lines, line{e, append(bytes.TrimRight(raw, "\r\n"), '\n')})
		}
		// A side that ends inside a batch (committed after a crash, before
		// the next append repaired it) holds an append that never finished:
		// drop it here, or sorting would move it where no one repairs it.
		for len(lines) > 0 && lines[len(lines)-1].e.More {
			lines = lines[:len(lines)-1]
		}
		for _, l := range lines {
			// Keep one copy per id; the smaller bytes win, so the order of the sides does not matter.
			if prev, dup := byID[l.e.ID]; !dup || bytes.Compare(l.raw, prev.raw) < 0 {
				byID[l.e.ID] = l
			}
		}
	}
	lines := make([]line, 0, len(byID))
	for _, l := range byID {
		lines = append(lines, l)
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].e.LC != lines[j].e.LC {
			return lines[i].e.LC < lines[j].e.LC
		}
		return lines[i].e.ID < lines[j].e.ID
	})
	for i, l := range lines {
		prev := ""
		if i > 0 {
			prev = lines[i-1].e.ID
		}
		if l.e.Prev != prev && (l.e.Prev != "" || i > 0 && lines[i-1].e.Prev != "") {
			return nil, fmt.Errorf("%w: event %s (lc %d) does not follow %q in writer %s's chain of prev, and a chained file is never unioned "+
				"(were this clone's files copied to another machine? one of the two must take a new writer id)", ErrForked, l.e.ID, l.e.LC, prev, l.e.Writer)
		}
	}
	var out bytes.Buffer
	for i, l := range lines {
		seq := uint64(i + 1)
		if l.e.Seq == seq {
			out.Write(l.raw)
			continue
		}
		spliced, err := spliceSeq(l.raw, seq)
		if err != nil {
			return nil, err
		}
		out.Write(spliced)
	}
	return out.Bytes(), nil
}

// spliceSeq replaces the value of the top-level "seq" member of a valid line.
func spliceSeq(raw []byte, seq uint64) ([]byte, error) {
	start, end := -1, -1
	fieldsAt(raw, func(key []byte, i, j int) error {
		if string(key) == "seq" {
			start, end = i, j
		}
		return nil
	})
	if start < 0 {
		return nil, fmt.Errorf("%w: no seq in %q", ErrCorrupt, raw)
	}
	out := append([]byte(nil), raw[:start]...)
	out = strconv.AppendUint(out, seq, 10)
	return append(out, raw[end:]...), nil
}
