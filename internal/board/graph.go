package board

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/spoolhq/spool/internal/workqueue"
)

// depGraph draws a task between what it depends on (left) and what
// depends on it (right), each box a link to its task, coloured by status.
// One level each way: the neighbours' own pages go further.
func depGraph(d workqueue.DetailJSON) template.HTML {
	if len(d.Dependencies) == 0 && len(d.Dependents) == 0 {
		return ""
	}
	const boxW, boxH, gap, colX2, colX3, width = 200, 30, 8, 250, 500, 700
	rows := max(len(d.Dependencies), len(d.Dependents), 1)
	height := rows*(boxH+gap) + gap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" viewBox="0 0 %d %d" role="img" aria-label="dependencies of %s">`, width, height, esc(d.ID))
	mid := height/2 - boxH/2
	box := func(x, y int, t workqueue.TaskJSON, kind string) {
		fmt.Fprintf(&b, `<a href="/tasks/%s"><g class="node st-%s"><rect x="%d" y="%d" width="%d" height="%d" rx="4"/>`,
			esc(t.ID), esc(t.Status), x, y, boxW, boxH)
		title := t.Title
		if r := []rune(title); len(r) > 22 {
			title = string(r[:21]) + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d"><tspan class="gid">%s</tspan> %s</text>`, x+6, y+19, esc(t.ID), esc(title))
		if kind != "" {
			fmt.Fprintf(&b, `<title>%s: %s (%s)</title>`, esc(kind), esc(t.Title), esc(t.Status))
		}
		b.WriteString(`</g></a>`)
	}
	column := func(x int, rel []workqueue.RelatedJSON, left bool) {
		top := (height - len(rel)*(boxH+gap) + gap) / 2
		for i, r := range rel {
			y := top + i*(boxH+gap)
			x1, x2 := x+boxW, colX2
			if !left {
				x1, x2 = colX2+boxW, x
			}
			fmt.Fprintf(&b, `<path class="edge" d="M%d,%d C%d,%d %d,%d %d,%d"/>`, x1, y+boxH/2, (x1+x2)/2, y+boxH/2, (x1+x2)/2, mid+boxH/2, x2, mid+boxH/2)
			box(x, y, r.TaskJSON, r.DependencyType)
		}
	}
	column(0, d.Dependencies, true)
	column(colX3, d.Dependents, false)
	box(colX2, mid, d.TaskJSON, "")
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
