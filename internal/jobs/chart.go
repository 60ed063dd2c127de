package jobs

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// RenderChart draws st for a terminal width columns wide (0: 80): bars
// for the waits, the hours and the usage, a sparkline for the queue depth.
// Plain Unicode blocks, no colour, so that it reads the same in a pipe.
func RenderChart(w io.Writer, st Stats, width int) {
	switch {
	case width <= 0:
		width = 80
	case width < 40:
		width = 40 // the bars keep 8 columns at least; text may run over
	}
	zone := st.loc
	if zone == nil {
		zone = st.Since.Location()
	}
	var b strings.Builder
	stamp := func(t time.Time) string { return t.In(zone).Format("2006-01-02 15:04") }
	fmt.Fprintf(&b, "Jobs %s to %s (%s)\n", stamp(st.Since), stamp(st.Until), st.Zone)
	t := st.Totals
	fmt.Fprintf(&b, "jobs: %d submitted, %d dispatched, %d completed, %d failed, %d cancelled\n",
		t.Submitted, t.Dispatched, t.Completed, t.Failed, t.Cancelled)
	fmt.Fprintf(&b, "slot time: %s\n", slotHours(t.SlotTime.Duration().Seconds()))

	var rows []barRow
	for _, x := range st.WaitAll {
		rows = append(rows, barRow{string(x.Tier), float64(x.Average), fmt.Sprintf("%s avg, %s max, %d %s",
			shortDuration(x.Average.Duration()), shortDuration(x.Longest.Duration()), x.Jobs, plural(x.Jobs, "job", "jobs"))})
	}
	bars(&b, "\nAverage wait by priority", rows, width)

	rows = rows[:0]
	for _, x := range st.Wait {
		rows = append(rows, barRow{x.Day + " " + string(x.Tier), float64(x.Average),
			fmt.Sprintf("%s (%d)", shortDuration(x.Average.Duration()), x.Jobs)})
	}
	bars(&b, "\nAverage wait by day", rows, width)

	sparkline(&b, st, zone, width)

	rows = rows[:0]
	for _, h := range st.Hours {
		rows = append(rows, barRow{fmt.Sprintf("%02d", h.Hour), float64(h.Submitted), fmt.Sprint(h.Submitted)})
	}
	bars(&b, "\nJobs submitted by hour of day", rows, width)

	rows = rows[:0]
	for _, h := range st.Hours {
		rows = append(rows, barRow{fmt.Sprintf("%02d", h.Hour), float64(h.SlotTime), slotHours(h.SlotTime.Duration().Seconds())})
	}
	bars(&b, "\nSlot time by hour of day", rows, width)

	for _, u := range []struct {
		title string
		uses  []SlotUse
	}{{"\nSlot time by user", st.Users}, {"\nSlot time by project", st.Projects}} {
		rows = rows[:0]
		for _, x := range u.uses {
			rows = append(rows, barRow{x.Name, float64(x.SlotTime), slotHours(x.SlotTime.Duration().Seconds())})
		}
		bars(&b, u.title, rows, width)
	}
	io.WriteString(w, b.String())
}

type barRow struct {
	label string
	value float64
	text  string
}

// eighths are the partial blocks, one eighth to seven.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bars draws a horizontal bar chart: label, bar scaled to the largest
// value, then the value as text. Nothing to draw says so.
func bars(b *strings.Builder, title string, rows []barRow, width int) {
	b.WriteString(title + "\n")
	if len(rows) == 0 {
		b.WriteString("  (none)\n")
		return
	}
	labelW, textW, most := 0, 0, 0.0
	for _, r := range rows {
		labelW = max(labelW, utf8.RuneCountInString(r.label))
		textW = max(textW, utf8.RuneCountInString(r.text))
		most = max(most, r.value)
	}
	labelW = min(labelW, width/3)
	cells := max(width-labelW-textW-6, 8)
	for _, r := range rows {
		label := r.label
		if n := utf8.RuneCountInString(label); n > labelW {
			label = string([]rune(label)[:labelW-1]) + "…"
		}
		fmt.Fprintf(b, "  %s%s  %s  %s\n", label, strings.Repeat(" ", labelW-utf8.RuneCountInString(label)), bar(r.value, most, cells), r.text)
	}
}

// bar is value's share of most in cells columns, in eighths of a cell.
func bar(value, most float64, cells int) string {
	n := 0
	if most > 0 && value > 0 {
		n = max(int(value/most*float64(cells*8)+0.5), 1) // whatever is not nothing shows
	}
	s := strings.Repeat("█", n/8) + eighths[n%8]
	return s + strings.Repeat(" ", cells-utf8.RuneCountInString(s))
}

// levels are the sparkline's heights; an empty queue is a space.
var levels = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the queue depth as one row of columns, each the most
// queued in its stretch of the window, with the times at both ends.
func sparkline(b *strings.Builder, st Stats, zone *time.Location, width int) {
	most := 0
	for _, p := range st.Depth {
		most = max(most, p.Depth)
	}
	fmt.Fprintf(b, "\nQueue depth (most %d)\n", most)
	if len(st.Depth) == 0 || !st.Until.After(st.Since) {
		b.WriteString("  (none)\n")
		return
	}
	cells := width - 4
	span := st.Until.Sub(st.Since)
	col := make([]int, cells)
	carry, k := 0, 0
	for c := range col {
		end := st.Since.Add(span * time.Duration(c+1) / time.Duration(cells))
		v := carry
		for ; k < len(st.Depth) && st.Depth[k].At.Before(end); k++ {
			v = max(v, st.Depth[k].Depth)
			carry = st.Depth[k].Depth
		}
		col[c] = v
	}
	var line strings.Builder
	for _, v := range col {
		switch {
		case v == 0 || most == 0:
			line.WriteRune(' ')
		default:
			line.WriteRune(levels[min((v*len(levels)-1)/most, len(levels)-1)])
		}
	}
	fmt.Fprintf(b, "  %s\n", line.String())
	from, to := st.Since.In(zone).Format("01-02 15:04"), st.Until.In(zone).Format("01-02 15:04")
	gap := max(cells-len(from)-len(to), 1)
	fmt.Fprintf(b, "  %s%s%s\n", from, strings.Repeat(" ", gap), to)
}

// shortDuration is d in its two largest units: 45s, 12m30s, 3h05m, 2d4h.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
