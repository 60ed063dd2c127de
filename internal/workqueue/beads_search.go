package workqueue

import (
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/table"
)

// BeadsSearch is bd search: BeadsList of the tasks admit passes whose id,
// title or description holds query, in any case (strings.ToLower's). A
// table's record is decoded only when its bytes can hold the query, and
// the dependent counts come from the table's index: bd search used to
// decode every task, render each as bd shows it and then match the text.
func (s *State) BeadsSearch(p Policy, now time.Time, admit func(t *Task, status string) bool, query string, limit int) []ListItemJSON {
	lq := strings.ToLower(query)
	pass := func(t *Task) bool {
		return (strings.Contains(strings.ToLower(t.ID), lq) || strings.Contains(strings.ToLower(t.Title), lq) ||
			strings.Contains(strings.ToLower(t.Detail().Description), lq)) && admit(t, s.BeadsStatus(t, p, now))
	}
	tt := s.trk.table()
	var x *listIndex
	if tt != nil {
		var err error
		if x, err = tt.listIndex(); err != nil {
			tt = nil
		}
	}
	if tt == nil {
		return s.BeadsList(p, now, func(t *Task, _ string) bool { return pass(t) }, nil, limit)
	}
	c := s.sinceSave(tt, x)
	type pick struct {
		key beadsKey
		pos int   // in the table; -1 for a task changed since the save
		t   *Task // that task
	}
	var picks []pick
	var sample []string // the first records: which byte of the query is rarest in this table
	for _, d := range tt.Range(0, min(len(tt.IDs), 32)) {
		sample = append(sample, d.Unread())
	}
	holds := foldFinder(lq, sample) // nil: every record is decoded
	tt.Scan(func(i int, d *table.Dec) bool {
		if c.changed(uint32(i)) || holds != nil && !holds(d.Unread()) {
			return true
		}
		if t := decodeTask(d); pass(t) { // t is the scan's: only its key is kept
			key := beadsKeyOf(t)
			key.id = tt.IDs[i]
			picks = append(picks, pick{key, i, nil})
		}
		return true
	})
	for _, t := range s.trk.m {
		if t != nil && pass(t) {
			picks = append(picks, pick{beadsKeyOf(t), -1, t})
		}
	}
	slices.SortFunc(picks, func(a, b pick) int {
		switch {
		case a.key.less(b.key):
			return -1
		case b.key.less(a.key):
			return 1
		}
		return 0
	})
	if limit > 0 && len(picks) > limit {
		picks = picks[:limit]
	}
	out := make([]ListItemJSON, len(picks))
	for k, it := range picks {
		t, n := it.t, 0
		if t == nil {
			t, n = s.taskAt(it.pos), c.dependentsAt(uint32(it.pos))
		} else {
			n = c.dependents(t.ID)
		}
		out[k] = beadsListItem(t, Beads(s.View(t, p, now)), n)
	}
	return out
}

// foldFinder returns a test that b may hold q (lower case) once lowered by
// strings.ToLower, for a search to pass over the bytes that cannot: it
// holds q in any ASCII case, or a rune that lowers to an ASCII letter of
// q (U+0130 to i, U+212A to k: no other rune lowers to ASCII). Nil when q
// is not ASCII. A byte that is not valid UTF-8 lowers to U+FFFD, which
// joins no ASCII text. Nil as well for "", which every text holds. It
// looks for the byte of q that sample holds least often (an id's prefix
// can make any letter common).
func foldFinder(q string, sample []string) func(b string) bool {
	if q == "" {
		return nil
	}
	for i := range len(q) {
		if q[i] >= 0x80 {
			return nil
		}
	}
	var odd []string // what lowers to a letter of q
	if strings.IndexByte(q, 'i') >= 0 {
		odd = append(odd, "\u0130")
	}
	if strings.IndexByte(q, 'k') >= 0 {
		odd = append(odd, "\u212a")
	}
	// Search for the rarest byte of q, in both cases, and compare around it.
	cases := func(c byte) []byte {
		if c >= 'a' && c <= 'z' {
			return []byte{c, c - 'a' + 'A'}
		}
		return []byte{c}
	}
	seen := func(c byte) (n int) {
		for _, a := range cases(c) {
			for _, b := range sample {
				n += strings.Count(b, string(a))
			}
		}
		return n
	}
	k, least := 0, -1
	for i := range len(q) {
		if n := seen(q[i]); least < 0 || n < least || n == least && byteRank(q[i]) < byteRank(q[k]) {
			k, least = i, n
		}
	}
	anchors := cases(q[k])
	return func(b string) bool {
		for _, a := range anchors {
			for from := k; from < len(b); {
				j := strings.IndexByte(b[from:], a)
				if j < 0 {
					break
				}
				at := from + j - k
				if at+len(q) <= len(b) && asciiFoldEqual(b[at:at+len(q)], q) {
					return true
				}
				from += j + 1
			}
		}
		for _, s := range odd {
			if strings.Contains(b, s) {
				return true
			}
		}
		return false
	}
}

// asciiFoldEqual reports whether s is q (lower case) in any ASCII case.
func asciiFoldEqual(s, q string) bool {
	for i := range len(q) {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != q[i] {
			return false
		}
	}
	return true
}

// byteRank orders bytes by how often English text holds them, the most
// often last; a byte that is not a letter or a space ranks first.
func byteRank(c byte) int {
	const common = "zqjxkvbpgywfmculdrhsnioate " // rarest first
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	return strings.IndexByte(common, c) + 1
}
