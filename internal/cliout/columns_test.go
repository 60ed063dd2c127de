package cliout

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
)

// Up to the rows it holds, Columns writes what tabwriter writes of the same
// rows, a row's trailing empty cells left out; after them, a column only
// widens.
func TestColumnsAsTabwriter(t *testing.T) {
	words := []string{"", "a", "sp-4mx5", "task.created", "ünïcödé", "2026-01-12T08:55:16Z", "{\"title\": \"x\"}", "日本語"}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		ncol := 1 + r.IntN(6)
		nrow := r.IntN(40)
		var rows [][]string
		for range nrow {
			cells := make([]string, ncol)
			for i := range cells {
				cells[i] = words[r.IntN(len(words))]
			}
			rows = append(rows, cells[:1+r.IntN(ncol)]) // rows of fewer cells break tabwriter's column blocks
		}
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		for _, c := range rows {
			n := len(c)
			for n > 0 && c[n-1] == "" {
				n-- // as Row leaves them out
			}
			tw.Write([]byte(strings.Join(c[:n], "\t") + "\n"))
		}
		tw.Flush()
		var got bytes.Buffer
		c := NewColumns(&got, nrow+r.IntN(3))
		for _, cells := range rows {
			if err := c.Row(cells...); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("round %d: got\n%s\nwant\n%s", round, got.String(), want.String())
		}
	}
}

func TestColumnsWidenAfterTheHeldRows(t *testing.T) {
	var got bytes.Buffer
	c := NewColumns(&got, 2)
	for _, r := range [][]string{{"a", "b", "c"}, {"aaa", "b", "c"}, {"aa", "bbbbb", "c"}, {"a", "b", ""}, {"a", "b", "c"}} {
		c.Row(r...)
	}
	c.Flush()
	want := "a    b  c\n" +
		"aaa  b  c\n" +
		"aa   bbbbb  c\n" + // the second column widens here
		"a    b\n" + // no trailing spaces
		"a    b      c\n"
	if got.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", got.String(), want)
	}
}
