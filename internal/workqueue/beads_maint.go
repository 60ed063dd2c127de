package workqueue

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// What beads' maintenance commands look for (bd repair-deps, validate,
// detect-pollution), over spool's tracker.

// OrphanDeps are the dependencies on issues the tracker does not have, by
// issue id: a dependency is checked when it is made, but a bd import keeps
// what its file names, and an issue it names may not be in the file. Type
// is bd's (blocks, parent-child, or a link's).
func (s *State) OrphanDeps() []DepJSON {
	all := s.allTasks()
	var out []DepJSON
	for _, id := range s.SortedIDs() {
		t := all[id]
		if t.Parent != "" && !s.HasTask(t.Parent) {
			out = append(out, DepJSON{IssueID: id, DependsOnID: t.Parent, Type: DepParentChild, CreatedAt: t.Detail().ParentAt})
		}
		for _, d := range t.Blockers {
			if !s.HasTask(d.ID) {
				out = append(out, DepJSON{IssueID: id, DependsOnID: d.ID, Type: DepBlocks, CreatedAt: d.At, CreatedBy: d.By})
			}
		}
		for _, l := range t.Links {
			if !s.HasTask(l.ID) {
				out = append(out, DepJSON{IssueID: id, DependsOnID: l.ID, Type: l.Type, CreatedAt: l.At, CreatedBy: l.By})
			}
		}
	}
	return out
}

// RemoveOrphanDeps removes every dependency OrphanDeps finds.
func RemoveOrphanDeps(s *State) []eventlog.Draft {
	var drafts []eventlog.Draft
	for _, o := range s.OrphanDeps() {
		typ := o.Type
		if typ == DepBlocks {
			typ = "" // as every blocks event is written
		}
		drafts = append(drafts, eventlog.Draft{Type: TypeDepRemoved, Subject: o.IssueID, Data: DepData{Blocker: o.DependsOnID, Type: typ}})
	}
	return drafts
}

// Polluted is an issue bd detect-pollution takes for test data, with its
// score (0.7 or more) and why.
type Polluted struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Score     float64   `json:"score"`
	Reasons   []string  `json:"reasons"`
	CreatedAt time.Time `json:"created_at"`
}

var (
	testTitle = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(test|benchmark|sample|tmp|temp|debug|dummy)[-_\s]`)
	})
	sequential = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]+-\d+$`) })
)

// Pollution scores every issue as bd 0.49.1's detectTestPollution does
// (the same signals and weights), in id order.
func (s *State) Pollution() []Polluted {
	all := s.allTasks()
	ids := s.SortedIDs()
	perMinute := map[int64]int{}
	for _, t := range all {
		perMinute[t.CreatedAt.Unix()/60]++
	}
	var out []Polluted
	for _, id := range ids {
		t := all[id]
		desc := t.Detail().Description
		title := strings.ToLower(t.Title)
		score, reasons := 0.0, []string{}
		if testTitle().MatchString(title) {
			score += 0.7
			reasons = append(reasons, "Title starts with test prefix")
		}
		if sequential().MatchString(id) && len(desc) < 20 {
			score += 0.4
			reasons = append(reasons, "Sequential ID with minimal description")
		}
		if strings.TrimSpace(desc) == "" {
			score += 0.2
			reasons = append(reasons, "No description")
		} else if len(desc) < 20 {
			score += 0.1
			reasons = append(reasons, "Very short description")
		}
		if n := perMinute[t.CreatedAt.Unix()/60]; n >= 10 {
			score += 0.3
			reasons = append(reasons, fmt.Sprintf("Created with %d other issues in same minute", n-1))
		}
		if strings.Contains(title, "issue for testing") || strings.Contains(title, "test issue") || strings.Contains(title, "sample issue") {
			score += 0.5
			reasons = append(reasons, "Generic test title")
		}
		if score >= 0.7 {
			out = append(out, Polluted{ID: id, Title: t.Title, Score: score, Reasons: reasons, CreatedAt: t.CreatedAt})
		}
	}
	return out
}

// Duplicates are the groups of issues with the same title, texts and
// status (bd's findDuplicateGroups), each in id order, the groups in the
// order of their first ids.
func (s *State) Duplicates(p Policy, now time.Time) [][]string {
	type key struct{ title, desc, design, acceptance, status string }
	all := s.allTasks()
	groups := map[key][]string{}
	var order []key
	for _, id := range s.SortedIDs() {
		t := all[id]
		x := t.Detail()
		k := key{t.Title, x.Description, x.Design, x.Acceptance, s.BeadsStatus(t, p, now)}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], id)
	}
	var out [][]string
	for _, k := range order {
		if len(groups[k]) > 1 {
			out = append(out, slices.Clip(groups[k]))
		}
	}
	return out
}
