package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// rules follows one writer file line by line and enforces what every line
// must be: of the file's writer, seq 1, 2, 3, … without a gap, (lc, id)
// strictly increasing, its prev, when it has one, the id of the line before
// (none on the first line), no line without prev after one with it, and its
// id the hash of its content. An id hashes the writer and the lc, so the
// order rule also means no id twice in a file, and the writer rule no id
// twice in the log; it hashes prev, so a line cannot be removed, added or
// moved without changing the id (and breaking the signature) of the line
// after it. Lines without prev are those of an older spool: nothing links
// them. Readers, Check and Repair share these rules, so a read never folds
// what verify would refuse.
type rules struct {
	writer  string
	seq     uint64 // of the last line accepted
	lc      uint64
	id      string
	line    int  // its line number
	chained bool // a line accepted so far had prev: every later one must
	hash    hash.Hash
	sum     []byte
}

// breach is one broken rule.
type breach struct {
	msg string
	dup bool // a copy of the previous line (readers drop it with a warning)
}

func newRules(writer string) *rules {
	return &rules{writer: writer, hash: sha256.New(), sum: make([]byte, 0, sha256.Size)}
}

// check judges line n (decoded as e, with the value spans sp). A line that
// breaks a rule is not accepted, except by accept, which Check calls to go on
// judging the lines after it.
func (r *rules) check(line []byte, e *Event, sp spans, n int) *breach {
	switch {
	case e.Writer != r.writer:
		return &breach{msg: fmt.Sprintf("writer %q in the file of writer %q", e.Writer, r.writer)}
	case e.Seq != r.seq+1:
		// The same seq, lc and id as the line before, and an id that is the
		// content's hash: the same event again (a line duplicated in place).
		if r.line > 0 && e.Seq == r.seq && e.LC == r.lc && e.ID == r.id && r.idMatches(line, e, sp) {
			return &breach{msg: fmt.Sprintf("copy of line %d", r.line), dup: true}
		}
		return &breach{msg: fmt.Sprintf("seq %d follows %d (want %d)", e.Seq, r.seq, r.seq+1)}
	case e.LC < r.lc:
		return &breach{msg: fmt.Sprintf("lc %d goes back from %d", e.LC, r.lc)}
	case e.LC == r.lc && e.ID == r.id:
		return &breach{msg: fmt.Sprintf("id %s already used at line %d", e.ID, r.line)}
	case e.LC == r.lc && e.ID < r.id:
		return &breach{msg: fmt.Sprintf("out of order: lc %d, id %s after id %s", e.LC, e.ID, r.id)}
	case e.Prev != r.id && (e.Prev != "" || r.chained):
		return &breach{msg: r.prevBreach(e)}
	case !r.idMatches(line, e, sp):
		want, _ := e.computeID()
		return &breach{msg: fmt.Sprintf("id %s does not match the content (want %s): the line was edited", e.ID, want)}
	}
	r.accept(e, n)
	return nil
}

// prevBreach says how e's prev breaks the chain.
func (r *rules) prevBreach(e *Event) string {
	switch {
	case r.line == 0:
		return fmt.Sprintf("prev %s on the first line: the lines before it were removed", e.Prev)
	case e.Prev == "":
		return fmt.Sprintf("no prev after line %d, which has one: a writer never goes back to lines without it (did an older spool append?)", r.line)
	}
	return fmt.Sprintf("prev %s is not the id of line %d (%s): a line was removed, added or moved before this one", e.Prev, r.line, r.id)
}

// accept makes e, at line n, the line the next one must follow.
func (r *rules) accept(e *Event, n int) {
	r.seq, r.lc, r.id, r.line = e.Seq, e.LC, e.ID, n
	r.chained = r.chained || e.Prev != ""
}

var blankID, zeroSeq, newline = []byte(`""`), []byte{'0'}, []byte{'\n'}

// idMatches reports whether e.ID is the hash computeID gives.
func (r *rules) idMatches(line []byte, e *Event, sp spans) bool {
	_, ok := r.contentHash(line, e, sp)
	return ok
}

// contentHash returns e's content hash and whether e.ID is taken from it.
// A line spool wrote is already the canonical encoding, so hashing it with
// the id and seq values blanked and the sig member cut is the same as
// encoding the event again, at a fraction of the cost; any other line is
// encoded again to be sure. The hash is r's until the next call.
func (r *rules) contentHash(line []byte, e *Event, sp spans) ([]byte, bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if fastPath(line, e, sp) {
		h := r.hash
		h.Reset()
		h.Write(line[:sp.idStart])
		h.Write(blankID)
		h.Write(line[sp.idEnd:sp.seqStart])
		h.Write(zeroSeq)
		if sp.sigEnd > 0 {
			h.Write(line[sp.seqEnd:sp.sigStart])
			h.Write(line[sp.sigEnd:])
		} else {
			h.Write(line[sp.seqEnd:])
		}
		h.Write(newline)
		r.sum = h.Sum(r.sum[:0])
		var hexed [24]byte
		hex.Encode(hexed[:], r.sum[:12])
		if string(hexed[:]) == e.ID {
			return r.sum, true
		}
	}
	sum, err := e.ContentHash()
	if err != nil {
		return nil, false
	}
	r.sum = append(r.sum[:0], sum[:]...)
	return r.sum, idOf(sum[:]) == e.ID
}

// fastPath says whether the spans allow hashing the line in place: id before
// seq, and a sig member, if any, after both as Encode writes it.
func fastPath(line []byte, e *Event, sp spans) bool {
	if sp.idStart <= 0 || sp.idEnd > sp.seqStart || sp.seqEnd > len(line) || len(e.ID) != 24 {
		return false
	}
	if sp.sigEnd == 0 {
		return true
	}
	return sp.sigStart >= sp.seqEnd && sp.sigEnd <= len(line)
}
