package board

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
)

// The charts are SVG drawn here: no script library, nothing to vendor.
const (
	chartW, chartH = 640, 180
	padL, padB     = 40, 24
)

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64
	Class string
	Title string
}

// bars draws a bar chart; unit follows each value in its tooltip.
func bars(bs []Bar, unit string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img">`, chartW, chartH)
	top := 0.0
	for _, x := range bs {
		top = max(top, x.Value)
	}
	if len(bs) == 0 || top == 0 {
		axes(&b, padL, 0, unit)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">no data</text></svg>`, chartW/2, chartH/2)
		return template.HTML(b.String())
	}
	top = niceCeil(top)
	left := axes(&b, padL, top, unit)
	w := float64(chartW-left) / float64(len(bs))
	for i, x := range bs {
		h := x.Value / top * float64(chartH-padB-10)
		xpos := float64(left) + float64(i)*w
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			esc(x.Class), xpos+1, float64(chartH-padB)-h, max(w-2, 1), h, esc(x.Title))
		if len(bs) <= 24 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="label">%s</text>`, xpos+w/2, chartH-8, esc(x.Label))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// chart draws a step line of (time, value) points from since to until.
func chart(at []time.Time, vals []float64, since, until time.Time) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img">`, chartW, chartH)
	top := 1.0
	for _, v := range vals {
		top = max(top, v)
	}
	top = niceCeil(top)
	left := axes(&b, padL, top, "")
	span := until.Sub(since).Seconds()
	x := func(t time.Time) float64 {
		return float64(left) + max(0, min(1, t.Sub(since).Seconds()/span))*float64(chartW-left)
	}
	y := func(v float64) float64 { return float64(chartH-padB) - v/top*float64(chartH-padB-10) }
	var pts []string
	last := 0.0
	for i, t := range at {
		if t.Before(since) {
			last = vals[i]
			continue
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(t), y(last), x(t), y(vals[i])))
		last = vals[i]
	}
	pts = append([]string{fmt.Sprintf("%d,%.1f", left, y(firstBefore(at, vals, since)))}, pts...)
	pts = append(pts, fmt.Sprintf("%d,%.1f", chartW, y(last)))
	fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="label">%s</text><text x="%d" y="%d" class="label end">%s</text></svg>`,
		left, chartH-8, esc(since.Local().Format("01-02 15:04")), chartW-2, chartH-8, esc(until.Local().Format("01-02 15:04 MST")))
	return template.HTML(b.String())
}

// firstBefore is the value in force at since.
func firstBefore(at []time.Time, vals []float64, since time.Time) float64 {
	v := 0.0
	for i, t := range at {
		if !t.Before(since) {
			break
		}
		v = vals[i]
	}
	return v
}

// axes draws the axes with the y axis labelled at top and half of it, and
// returns where the plot starts: far enough right for the labels to fit
// (at 10 px, a character is at most about 6.5 px wide).
func axes(b *strings.Builder, minLeft int, top float64, unit string) (left int) {
	labels := []string{axisNumber(top) + unit, axisNumber(top/2) + unit}
	left = minLeft
	for _, l := range labels {
		left = max(left, len(l)*13/2+8)
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, chartH-padB, chartW, chartH-padB)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="10" x2="%d" y2="%d"/>`, left, left, chartH-padB)
	if top > 0 {
		mid := float64(chartH-padB) - float64(chartH-padB-10)/2
		fmt.Fprintf(b, `<text x="%d" y="14" class="label end">%s</text>`, left-4, esc(labels[0]))
		fmt.Fprintf(b, `<text x="%d" y="%.0f" class="label end">%s</text>`, left-4, mid+4, esc(labels[1]))
	}
	return left
}

// niceCeil is the least of 1, 2, 2.5, 5 times a power of ten that is at
// least v: an axis top whose label is short and whose half is round too.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// axisNumber formats an axis value without noise: 300, 2.5, 0.05.
func axisNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func depthChart(pts []jobs.DepthPoint, since, until time.Time) template.HTML {
	at := make([]time.Time, len(pts))
	vals := make([]float64, len(pts))
	for i, p := range pts {
		at[i], vals[i] = p.At, float64(p.Depth)
	}
	return chart(at, vals, since, until)
}

// waitChart shows average waits in minutes, or in hours when the longest
// is two hours or more.
func waitChart(ws []jobs.TierWait) template.HTML {
	unit, per := " min", time.Minute
	for _, w := range ws {
		if time.Duration(w.Average) >= 2*time.Hour {
			unit, per = " h", time.Hour
		}
	}
	var bs []Bar
	for _, w := range ws {
		avg := time.Duration(w.Average)
		bs = append(bs, Bar{Label: string(w.Tier), Value: float64(avg) / float64(per), Class: "tier-" + string(w.Tier),
			Title: fmt.Sprintf("%s: %d jobs, average wait %s", w.Tier, w.Jobs, avg.Round(time.Second))})
	}
	return bars(bs, unit)
}

func hoursChart(hs []jobs.HourUse) template.HTML {
	var bs []Bar
	for _, h := range hs {
		bs = append(bs, Bar{Label: fmt.Sprint(h.Hour), Value: float64(h.Submitted), Class: "hour",
			Title: fmt.Sprintf("%02d:00: %d submitted, %s of slot time", h.Hour, h.Submitted, time.Duration(h.SlotTime).Round(time.Second))})
	}
	return bars(bs, "")
}

func esc(s string) string { return template.HTMLEscapeString(s) }

func badRequest(format string, args ...any) error {
	return fault.New(CodeBadRequest, nil, fmt.Sprintf(format, args...))
}
