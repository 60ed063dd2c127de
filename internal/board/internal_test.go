package board

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0}, {1, 1}, {1.2, 2}, {2, 2}, {2.1, 2.5}, {3, 5}, {4.74, 5}, {5.01, 10},
		{284.6, 500}, {146, 200}, {0.03, 0.05}, {1000, 1000}, {1001, 2000},
	} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// Every y-axis label fits left of the axis and says what the axis top and
// middle are.
func TestChartLabelsFit(t *testing.T) {
	label := regexp.MustCompile(`<text x="(\d+)" y="(\d+)" class="label end">([^<]+)</text>`)
	axis := regexp.MustCompile(`<line class="axis" x1="(\d+)" y1="10"`)
	for name, c := range map[string]struct {
		svg  string
		want []string
	}{
		"a wait of 284.6 min": {string(waitChart([]jobs.TierWait{{Tier: "normal", Jobs: 3, Average: jobs.Seconds(284*time.Minute + 36*time.Second)}, {Tier: "urgent", Jobs: 1, Average: jobs.Seconds(time.Minute)}})), []string{"5 h", "2.5 h"}},
		"a wait of 12 min":    {string(waitChart([]jobs.TierWait{{Tier: "normal", Jobs: 3, Average: jobs.Seconds(12 * time.Minute)}})), []string{"20 min", "10 min"}},
		"146 submitted":       {string(bars([]Bar{{Label: "9", Value: 146}}, "")), []string{"200", "100"}},
		"a depth of 123456":   {string(chart([]time.Time{time.Unix(100, 0)}, []float64{123456}, time.Unix(0, 0), time.Unix(200, 0))), []string{"200000", "100000"}},
	} {
		ax := axis.FindStringSubmatch(c.svg)
		if ax == nil {
			t.Fatalf("%s: no y axis:\n%s", name, c.svg)
		}
		left, _ := strconv.Atoi(ax[1])
		var got []string
		for _, m := range label.FindAllStringSubmatch(c.svg, -1) {
			x, _ := strconv.Atoi(m[1])
			if y, _ := strconv.Atoi(m[2]); y > chartH-padB {
				continue // the time axis's end label
			}
			got = append(got, m[3])
			if x >= left || float64(x)-6.5*float64(len(m[3])) < 0 {
				t.Errorf("%s: label %q at x=%d does not fit left of the axis at %d", name, m[3], x, left)
			}
		}
		if len(got) != 2 || got[0] != c.want[0] || got[1] != c.want[1] {
			t.Errorf("%s: y labels %q, want %q", name, got, c.want)
		}
	}
}

func TestWholeRunes(t *testing.T) {
	check := "✓" // 3 bytes
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"abc", "abc"}, {"a" + check, "a" + check},
		{"a" + check[:1], "a"}, {"a" + check[:2], "a"}, {"é"[:1], ""}, {"é", "é"},
		{"ok\n", "ok\n"}, {"a\xff", "a\xff"}, // not a cut sequence: kept as it is
	} {
		if got := string(wholeRunes([]byte(c.in))); got != c.want {
			t.Errorf("wholeRunes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// endOf is the file's last lines, whole, with the last newline, and the
// offset right after what it returned.
func TestEndOf(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content, want string
	}{
		{"empty", "", ""},
		{"short", "a\nb\n", "a\nb\n"},
		{"no final newline", "a\nb", "a\nb"},
		{"a cut rune at the end", "a\n✓"[:4], "a\n"},
		{"more lines than shown", strings.Repeat("x\n", tailLines+5), strings.Repeat("x\n", tailLines)},
		{"more bytes than shown", "first line is cut\n" + strings.Repeat("y", tailBytes-3) + "\n", ""},
	} {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(c.content), 0o644)
		f := openRegular(p)
		if f == nil {
			t.Fatalf("%s: not opened", c.name)
		}
		got, off := endOf(f)
		f.Close()
		want := c.want
		if c.name == "more bytes than shown" {
			want = strings.Repeat("y", tailBytes-3) + "\n"
		}
		if string(got) != want {
			t.Errorf("%s: %q", c.name, got)
		}
		wantOff := int64(len(c.content))
		if c.name == "a cut rune at the end" {
			wantOff = 2 // the cut rune comes with the next read
		}
		if off != wantOff {
			t.Errorf("%s: offset %d, want %d", c.name, off, wantOff)
		}
	}
}
