package prime

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	long := strings.Repeat("A very long title, ", 40)
	busy := Context{Bin: "spool bd", Counts: Counts{Open: 226542, InProgress: 98765, Blocked: 4321, Ready: 55555, Closed: 999999},
		Task: &Issue{ID: "sp-a3f8x", Title: long, Priority: 0}, Attempt: 12,
		Ready: []Issue{{"sp-1111", long, 0}, {"sp-2222", long, 1}, {"sp-3333", "tab\tand\nnewline \x1b[31m", 2}}}
	for _, tc := range []struct {
		name    string
		c       Context
		mode    Mode
		max     int      // bytes at most
		want    []string // lines or fragments it must have
		notWant []string
	}{
		{name: "short, under 2 KB whatever the titles", c: busy, mode: Short, max: 2048,
			want: []string{"`spool bd` here is spool", "Now: 226542 open (55555 ready, 98765 in progress, 4321 blocked), 999999 closed.",
				`Your task: sp-a3f8x "A very long title,`, "(attempt 12)", "Ready: sp-3333 [P2] \"tab and newline \\x1b[31m\"",
				"exit status is your result", "Never close your own task (spool bd close)", "spool bd comments add ID",
				"spool heartbeat ID", "Create no tasks and dependencies", "plan proposal", "spool plan feedback",
				"spool bd ready", "spool bd show ID"},
			notWant: []string{"\x1b", "stats"}},
		{name: "no task outside an orchestrated run", c: Context{}, mode: Short, max: 2048,
			want:    []string{"# Work tracking: spool (as bd)", "Now: 0 open (0 ready, 0 in progress, 0 blocked), 0 closed.", "bd dep tree ID"},
			notWant: []string{"Your task", "Ready:"}},
		{name: "full adds the reference", c: Context{}, mode: Full, max: 4096,
			want: []string{"bd search TEXT", "bd stats", "bd epic status", "Never close your own task"}},
		{name: "mcp: the rules alone", c: busy, mode: MCP, max: 1024,
			want:    []string{"Never close your own task", "propose them"},
			notWant: []string{"Now:", "Your task", "## Commands"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.c, tc.mode); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if b.Len() > tc.max {
				t.Errorf("%d bytes, more than %d:\n%s", b.Len(), tc.max, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestOnboard(t *testing.T) {
	var b bytes.Buffer
	if err := Onboard(&b, "bd"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"--- BEGIN AGENTS.MD CONTENT ---", "Run `bd prime`", "`bd ready`", "--- END AGENTS.MD CONTENT ---"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("missing %q in:\n%s", w, b.String())
		}
	}
}
