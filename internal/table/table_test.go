package table_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

const magic = "test-table-1\n"

// build writes n records, record i holding its number, a string, a list
// and a time; the index holds n again.
func build(t *testing.T, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	w := table.NewWriter(&out, magic, n)
	records(w, n)
	if err := w.Finish(func(e *table.Enc) { e.Uint(uint64(n)) }); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// records writes build's n records.
func records(w *table.Writer, n int) {
	for i := range n {
		w.Record(fmt.Sprintf("id-%04d", i), func(e *table.Enc) {
			e.Int(int64(-i))
			e.Str(fmt.Sprint("text ", i))
			e.Strs([]string{"a", fmt.Sprint(i)})
			e.Bool(i%2 == 0)
			e.Time(time.Unix(int64(i), 0))
		})
	}
}

func open(b []byte) (*table.Table, error) {
	return table.Open(bytes.NewReader(b), int64(len(b)), magic, func(d *table.Dec, n int) error {
		if d.Uint() != uint64(n) {
			return table.ErrDamaged
		}
		return d.Err()
	})
}

func check(t *testing.T, i int, d *table.Dec) {
	t.Helper()
	n, s, l, b, at := d.Int(), d.Str(), d.Strs(), d.Bool(), d.Time()
	if err := d.End(); err != nil || n != int64(-i) || s != fmt.Sprint("text ", i) || len(l) != 2 || l[1] != fmt.Sprint(i) ||
		b != (i%2 == 0) || !at.Equal(time.Unix(int64(i), 0)) {
		t.Fatalf("record %d: %d %q %q %v %v (%v)", i, n, s, l, b, at, err)
	}
}

func TestRecordsReadBack(t *testing.T) {
	b := build(t, 300)
	tb, err := open(b)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 300 || tb.Find("id-0123") != 123 || tb.Find("id-9999") != -1 {
		t.Fatalf("len %d, find %d", tb.Len(), tb.Find("id-0123"))
	}
	for _, i := range []int{0, 1, 150, 299} {
		check(t, i, tb.Record(i))
	}
	for k, d := range tb.Range(100, 200) {
		check(t, 100+k, d)
	}
	for k, d := range tb.All() {
		check(t, k, d)
	}
	tb.Check()
}

// Every byte of the index, the offset and the magic is covered: changing
// any makes Open refuse the table rather than read something else.
func TestDamagedIndexIsRefused(t *testing.T) {
	b := build(t, 5)
	start := len(b) - 12 // the index's checksum and offset at least
	for i := range len(magic) {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := open(c); !errors.Is(err, table.ErrDamaged) {
			t.Fatalf("magic byte %d: %v", i, err)
		}
	}
	for i := start; i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := open(c); !errors.Is(err, table.ErrDamaged) {
			t.Fatalf("byte %d of %d: %v", i, len(b), err)
		}
	}
}

// A damaged record opens (the index is whole) and panics with
// corrupt_snapshot when it is read, by Record, Range or Check.
func TestDamagedRecordPanics(t *testing.T) {
	b := build(t, 5)
	b[len(magic)+6] ^= 1 // inside record 0
	tb, err := open(b)
	if err != nil {
		t.Fatal(err)
	}
	check(t, 1, tb.Record(1))
	for name, read := range map[string]func(){"Record": func() { tb.Record(0) }, "Range": func() { tb.Range(0, 2) }, "Check": tb.Check} {
		func() {
			defer func() {
				var fe *fault.Error
				if err, _ := recover().(error); !errors.As(err, &fe) || fe.Code != table.CodeCorruptSnapshot.Name {
					t.Errorf("%s: want a corrupt_snapshot panic, got %v", name, err)
				}
			}()
			read()
		}()
	}
}

// A decoder fails, rather than reading past its bytes, on a length longer
// than what is left.
func TestDecoderFailsOnShortInput(t *testing.T) {
	var e table.Enc
	e.Str("hello")
	d := table.NewDec(string(e.Buf[:3]))
	if s := d.Str(); s != "" || !errors.Is(d.Err(), table.ErrDamaged) {
		t.Fatalf("%q %v", s, d.Err())
	}
	if d.Uint() != 0 || d.Time() != (time.Time{}) || d.Bool() {
		t.Fatal("reads after a failure return zero values")
	}
}

// countingReader counts the reads made of it.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// After Preload, Record reads nothing more, and each record reads back as
// it did, however many times it is asked for.
func TestPreloadReadsOnce(t *testing.T) {
	b := build(t, 50)
	cr := &countingReader{r: bytes.NewReader(b)}
	tb, err := table.Open(cr, int64(len(b)), magic, func(d *table.Dec, n int) error {
		d.Uint()
		return d.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.Preload()
	before := cr.reads
	for _, i := range []int{49, 0, 7, 7, 30, 3, 3} {
		check(t, i, tb.Record(i))
	}
	if cr.reads != before {
		t.Fatalf("Record read %d more times after Preload", cr.reads-before)
	}
}

// Mapped reads a table opened on a file, at an offset in it as a snapshot
// holds one after its header, record for record as Record does, and a
// damaged record panics there too; a table held in memory falls back to
// reading it.
func TestMappedReadsAsRecord(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		b := build(t, 300)
		if damaged {
			b[len(magic)+6] ^= 1 // inside record 0
		}
		head := []byte("a header line\n")
		path := filepath.Join(t.TempDir(), "t.snap")
		if err := os.WriteFile(path, append(head, b...), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var tb *table.Table
		err = table.OpenOn(f, int64(len(head)), int64(len(head)+len(b)), func(r io.ReaderAt, size int64) (*table.Table, error) {
			tb, err = table.Open(r, size, magic, func(d *table.Dec, n int) error { d.Uint(); return d.Err() })
			return tb, err
		})
		if err != nil {
			t.Fatal(err)
		}
		mem, err := open(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range []*table.Table{tb, mem} {
			func() {
				defer func() {
					var fe *fault.Error
					if err, _ := recover().(error); damaged != (errors.As(err, &fe) && fe.Code == table.CodeCorruptSnapshot.Name) {
						t.Errorf("damaged %v: recovered %v", damaged, err)
					}
				}()
				err := tb.Mapped(func(m table.Mapping) error {
					for i := 299; i >= 0; i-- {
						check(t, i, m.Record(i))
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				tb.Preload()
				for i := 299; i >= 0; i-- {
					check(t, i, tb.Record(i))
				}
			}()
		}
	}
}

// A part written with BeginChecked and EndChecked reads back alone, from
// bytes not checked whole (a mapped section): any change to it is found.
func TestCheckedPart(t *testing.T) {
	var e table.Enc
	at := e.BeginChecked()
	e.Buf = append(e.Buf, "the listing"...)
	e.EndChecked(at)
	e.Str("the rest")
	for i := range len(e.Buf) + 1 {
		b := slices.Clone(e.Buf)
		if i < len(b) {
			b[i] ^= 0x40
		}
		s, ok := table.NewDec(string(b)).Checked()
		if want := i >= len(e.Buf)-len("the rest")-1; ok != want || ok && s != "the listing" {
			t.Errorf("byte %d changed: %q %v", i, s, ok)
		}
	}
	if _, ok := table.NewDec("ab").Checked(); ok {
		t.Error("a short part passed")
	}
}

// A section lies between the records and the index: opening the table
// reads none of it, ReadSection and CheckSection check it, SectionOf
// writes parts as Section writes them whole, a mapping hands it over
// unchecked (its reader checks the parts), and a place outside that
// space or a changed byte is refused.
func TestSection(t *testing.T) {
	var out bytes.Buffer
	w := table.NewWriter(&out, magic, 2)
	records(w, 2)
	sec := w.Section([]byte("the section"))
	parts := w.SectionOf(slices.Values([][]byte{[]byte("the "), nil, []byte("parts")}))
	if err := w.Finish(func(e *table.Enc) { e.Uint(2); sec.Encode(e); parts.Encode(e) }); err != nil {
		t.Fatal(err)
	}
	if whole := table.NewWriter(io.Discard, magic, 0).Section([]byte("the parts")); parts.Len != whole.Len || parts.Sum != whole.Sum {
		t.Fatalf("SectionOf %+v, Section of the same bytes %+v", parts, whole)
	}
	b := out.Bytes()
	onFile := func(b []byte) *table.Table {
		tb, _ := openOnFile(t, b, func(d *table.Dec) {
			d.Uint()
			table.DecodeSection(d)
			table.DecodeSection(d)
		})
		return tb
	}
	open := func(b []byte, file bool) (*table.Table, []table.Section) {
		var got []table.Section
		tb, err := table.Open(bytes.NewReader(b), int64(len(b)), magic, func(d *table.Dec, n int) error {
			d.Uint()
			got = append(got, table.DecodeSection(d), table.DecodeSection(d))
			return d.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if file {
			tb = onFile(b)
		}
		return tb, got
	}
	mapped := func(tb *table.Table, s table.Section) (b []byte, err error) {
		tb.Mapped(func(m table.Mapping) error {
			b, err = m.Section(s)
			b = slices.Clone(b)
			return nil
		})
		return b, err
	}
	for _, file := range []bool{false, true} {
		tb, got := open(b, file)
		check(t, 1, tb.Record(1))
		for k, want := range []string{"the section", "the parts"} {
			s, err := tb.ReadSection(got[k])
			m, merr := mapped(tb, got[k])
			if err != nil || string(s) != want || tb.CheckSection(got[k]) != nil || merr != nil || string(m) != want {
				t.Fatalf("file %v, section %d: %q, %v; mapped %q, %v", file, k, s, err, m, merr)
			}
		}
		huge := got[0] // a length that overflows the end it makes
		huge.Len = math.MaxInt64
		_, merr := mapped(tb, huge)
		if _, err := tb.ReadSection(huge); err == nil || tb.CheckSection(huge) == nil || merr == nil {
			t.Errorf("file %v: a section past the end was read", file)
		}
		inRecords := got[0]
		inRecords.Off = int64(len(magic))
		_, merr = mapped(tb, inRecords)
		if _, err := tb.ReadSection(inRecords); err == nil || tb.CheckSection(inRecords) == nil || merr == nil {
			t.Errorf("file %v: a section inside the records was read", file)
		}
		damaged := slices.Clone(b)
		damaged[got[1].Off+2] ^= 1
		tb, got = open(damaged, file)
		m, merr := mapped(tb, got[1])
		if _, err := tb.ReadSection(got[1]); err == nil || tb.CheckSection(got[1]) == nil || (merr == nil) != file || file && string(m) != "thd parts" {
			t.Errorf("file %v: a changed section was read: mapped %q, %v", file, m, merr)
		}
	}
}

// A table file cut short in place under its mapping (spool only replaces
// them; something else did it) faults where a record is read: a panic
// MappedFault tells for corrupt_snapshot, not a crash by SIGBUS.
func TestMappedFileCutShort(t *testing.T) {
	tb, path := openOnFile(t, build(t, 3000), func(d *table.Dec) { d.Uint() })
	skipWithoutMappings(t)
	defer func() {
		p := recover()
		if fe, ok := table.MappedFault(p); !ok || fe.Code != table.CodeCorruptSnapshot.Name {
			t.Fatalf("recovered %v, want a fault MappedFault tells for corrupt_snapshot", p)
		}
	}()
	tb.Mapped(func(m table.Mapping) error {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		m.Record(2999)
		return nil
	})
	t.Fatal("a record read past the file's end")
}

// openOnFile opens table b from a file, as a snapshot is opened, its
// kind's index fields read by extra; and the file's path.
func openOnFile(t *testing.T, b []byte, extra func(d *table.Dec)) (*table.Table, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.snap")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var tb *table.Table
	if err := table.OpenOn(f, 0, int64(len(b)), func(r io.ReaderAt, size int64) (*table.Table, error) {
		tb, err = table.Open(r, size, magic, func(d *table.Dec, n int) error { extra(d); return d.Err() })
		return tb, err
	}); err != nil {
		t.Fatal(err)
	}
	return tb, path
}

// A fault after a mapping was unmapped, its file as long as ever (a bug,
// not a file cut short), is not taken for a damaged snapshot.
func TestMappedFaultIsOnlyAFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 3<<12), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap := table.MapFile(f, 0, 3<<12)
	if data == nil {
		t.Skip("no mappings on this system")
	}
	unmap()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	p := func() (p any) {
		defer func() { p = recover() }()
		sink += data[1<<12]
		return nil
	}()
	if p == nil {
		t.Fatal("a read after the unmap did not fault")
	}
	if _, ok := table.MappedFault(p); ok {
		t.Fatalf("a read after an unmap taken for a file cut short: %v", p)
	}
}

var sink byte

// skipWithoutMappings skips a test of mapped files where MapFile maps none.
func skipWithoutMappings(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("x")
	data, unmap := table.MapFile(f, 0, 1)
	if data == nil {
		t.Skip("no mappings on this system")
	}
	unmap()
}
