package table_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/table"
)

// buildSummary writes a table of ids with a summary (its record count),
// and returns it with each record's span.
func buildSummary(t *testing.T, ids []string) ([]byte, [][2]int64) {
	t.Helper()
	var out bytes.Buffer
	w := table.NewWriter(&out, magic, len(ids))
	var spans [][2]int64
	for _, id := range ids {
		w.Record(id, func(e *table.Enc) { e.Str("record of " + id) })
		from, to := w.Span()
		spans = append(spans, [2]int64{from, to})
	}
	err := w.FinishSummary(func(e *table.Enc) { e.Uint(uint64(len(ids))) },
		func(e *table.Enc) { e.Uint(uint64(len(ids))) })
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), spans
}

// A table with a summary opens whole (its kind skipping the summary) and
// by its summary alone; the summary's id stream finds every id the table
// holds, and no other, across its buffer (ids sharing their first bytes,
// ids longer than 127 bytes and than half the buffer), and names each
// record's span.
func TestSummaryIDs(t *testing.T) {
	var ids []string
	for i := range 30_000 {
		ids = append(ids, fmt.Sprintf("sp-%07d", 2*i)) // the odd ones are absent
	}
	ids = append(ids, "sp-9"+strings.Repeat("x", 200), "sp-9"+strings.Repeat("y", 40_000), "sp-a", "sp-a0")
	slices.Sort(ids)
	b, spans := buildSummary(t, ids)
	whole, err := table.Open(bytes.NewReader(b), int64(len(b)), magic, func(d *table.Dec, n int) error {
		d.Uint()
		table.SkipSummary(d)
		return d.Err()
	})
	if err != nil || !slices.Equal(whole.IDs, ids) {
		t.Fatalf("whole: %v", err)
	}
	s, err := table.OpenSummary(bytes.NewReader(b), int64(len(b)), magic)
	if err != nil || s.Uint() != uint64(len(ids)) || s.End() != nil {
		t.Fatalf("summary: %v", err)
	}
	for _, step := range []int{1, 2, 7, 1000} {
		st := s.IDs()
		if st.Len() != len(ids) {
			t.Fatalf("%d ids, want %d", st.Len(), len(ids))
		}
		for i := 0; i < len(ids); i += step {
			if i%2 == 1 && i < 60_000 {
				if got := st.Seek(fmt.Sprintf("sp-%07d", 2*i-1)); got != -1 { // between two ids
					t.Fatalf("absent id found at %d", got)
				}
			}
			if got := st.Seek(ids[i]); got != i {
				t.Fatalf("step %d: %s at %d, want %d", step, ids[i], got, i)
			}
		}
		if st.Seek("zz") != -1 || st.Seek("zzz") != -1 || st.Done() != nil {
			t.Fatalf("step %d: past the end", step)
		}
	}
	for _, i := range []int{0, 17, len(ids) - 1} {
		d, err := s.Record(spans[i][0], spans[i][1])
		if err != nil || d.Str() != "record of "+ids[i] {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if _, err := s.Record(spans[3][0]+1, spans[3][1]); err == nil {
		t.Fatal("a span off by one read")
	}

	// A byte changed among the ids: the stream says so when done, the
	// summary still opens (its own checksum), the whole table does not.
	bad := bytes.Clone(b)
	bad[bytes.LastIndex(bad, []byte("sp-0031000"))+5]++ // in the index, after the records
	s, err = table.OpenSummary(bytes.NewReader(bad), int64(len(bad)), magic)
	if err != nil {
		t.Fatal(err)
	}
	st := s.IDs()
	st.Seek("sp-1")
	if err := st.Done(); !errors.Is(err, table.ErrDamaged) {
		t.Fatalf("damaged ids: %v", err)
	}
	// A byte changed in the summary: it does not open.
	bad = bytes.Clone(b)
	bad[len(bad)-21]++
	if _, err := table.OpenSummary(bytes.NewReader(bad), int64(len(bad)), magic); err == nil {
		t.Fatal("damaged summary opened")
	}
	for _, cut := range [][]byte{b[:len(b)-1], b[:10], nil} {
		if _, err := table.OpenSummary(bytes.NewReader(cut), int64(len(cut)), magic); err == nil {
			t.Fatal("cut table opened")
		}
	}
}

// Find and At, by the fences, name every record the table holds at its position
// and span, and no other id (below the first, between two, past the
// last, at a group's edges); a changed group or fence is ErrDamaged.
func TestFindByFences(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 1000} {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("sp-%05d", 2*i+1))
		}
		b, spans := buildSummary(t, ids)
		s, err := table.OpenSummary(bytes.NewReader(b), int64(len(b)), magic)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			j, from, to, err := s.Find(id)
			if err != nil || j != i || from != spans[i][0] || to != spans[i][1] {
				t.Fatalf("n %d: Find(%s) = %d [%d, %d) %v, want %d %v", n, id, j, from, to, err, i, spans[i])
			}
			if got, f, tt, err := s.At(i); err != nil || got != id || f != from || tt != to {
				t.Fatalf("n %d: At(%d) = %s [%d, %d) %v, want %s", n, i, got, f, tt, err, id)
			}
			d, err := s.Record(from, to)
			if err != nil || d.Str() != "record of "+id {
				t.Fatalf("n %d: record of %s: %v", n, id, err)
			}
			for _, other := range []string{fmt.Sprintf("sp-%05d", 2*i), fmt.Sprintf("sp-%05d", 2*i+2), id + "x"} {
				if j, _, _, err := s.Find(other); j != -1 || err != nil {
					t.Fatalf("n %d: Find(%s) = %d, %v", n, other, j, err)
				}
			}
		}
	}
	ids := []string{"a", "b", "c"}
	b, spans := buildSummary(t, ids)
	for at := range len(b) {
		c := slices.Clone(b)
		c[at] ^= 0x20
		s, err := table.OpenSummary(bytes.NewReader(c), int64(len(c)), magic)
		if err != nil {
			continue // the summary or the tail: refused at open
		}
		for i, id := range ids {
			// Any change is found, or it lay elsewhere (a record: its own
			// checksum finds it when read) and the answer is the same.
			j, from, to, err := s.Find(id)
			if err == nil && (j != i || from != spans[i][0] || to != spans[i][1]) {
				t.Fatalf("byte %d changed: Find(%s) = %d [%d, %d), no error", at, id, j, from, to)
			}
		}
	}
}

// A section the summary names past the space before the index is
// refused, however large its place and length (their sum overflowed).
func TestSummarySectionBounds(t *testing.T) {
	b, _ := buildSummary(t, []string{"a", "b"})
	s, err := table.OpenSummary(bytes.NewReader(b), int64(len(b)), magic)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []table.Section{{Off: 1, Len: math.MaxInt64}, {Off: math.MaxInt64, Len: 1}, {Off: -1, Len: 1}, {Off: 0, Len: int64(len(b))}} {
		if _, err := s.ReadSection(sec); !errors.Is(err, table.ErrDamaged) {
			t.Errorf("section %+v: %v", sec, err)
		}
	}
}
