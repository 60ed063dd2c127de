package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The bd front end prints what bd 0.49.1 prints. testdata/beads/record.sh
// drives a client's argv through "bd"; its output from real bd is in
// testdata/beads/bd-0.49.1. Here the same script runs with spool installed
// as bd, and every file must match once ids and times are made neutral:
// JSON (NAME.json) the same keys in the same order with the same values
// (spool may add keys only where a file's entry in bdExtras says so, and a
// value in bdVolatile, a measure of elapsed time, need only be a number);
// text (NAME.txt) line for line, dates as <date> and bd's random tips left
// out. An error's stderr (NAME.stderr) must match in its first line. The
// repository's git user.name, user.email and BD_ACTOR differ, as
// record.sh's were: bd's created_by is the actor, its owner git's email.
func TestBDFrontEndMatchesRecordedBD(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "bd")); err != nil {
		t.Fatal(err)
	}
	repo, out := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BD_ACTOR=ada", "SPOOL_ACTOR=", "SPOOL_NOW=", "GIT_AUTHOR_EMAIL=", "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo,
		"CLAUDE_CODE=", "BD_AGENT_MODE=") // bd's agent mode changes list's lines
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {"git", "config", "user.email", "ada@example.com"},
		{"git", "config", "user.name", "Ada Lovelace"}, {bin, "init"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = repo, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "beads", "record.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script, out)
	cmd.Dir, cmd.Env = repo, env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record.sh: %v\n%s", err, b)
	}

	golden := filepath.Join("..", "..", "testdata", "beads", "bd-0.49.1")
	files, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	bdIDs, spoolIDs := readIDs(t, filepath.Join(golden, "ids")), readIDs(t, filepath.Join(out, "ids"))
	for _, f := range files {
		name := f.Name()
		if name == "ids" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := neutral(t, filepath.Join(golden, name), bdIDs)
			got := neutral(t, filepath.Join(out, name), spoolIDs)
			if strings.HasSuffix(name, ".status") {
				if got != want {
					t.Fatalf("exit status %s, bd's %s", got, want)
				}
				return
			}
			if strings.HasSuffix(name, ".txt") {
				want, got := neutralText(want), neutralText(got)
				if got != want {
					t.Fatalf("text differs from bd's:\n%s", lineDiff(want, got))
				}
				return
			}
			if strings.HasSuffix(name, ".stderr") {
				first := func(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }
				if first(got) != first(want) {
					t.Fatalf("stderr %q, bd's %q", first(got), first(want))
				}
				return
			}
			wantV, gotV := numberTimes(jsonDocs(t, want, name)), numberTimes(jsonDocs(t, got, name))
			for _, k := range bdVolatile[name] {
				wantV, gotV = volatile(t, wantV, k), volatile(t, gotV, k)
			}
			if err := sameJSON(wantV, gotV, "", bdExtras[name]); err != nil {
				t.Fatalf("%v\nbd:\n%s\nspool:\n%s", err, want, got)
			}
			decodeAsBD(t, filepath.Join(out, name))
		})
	}
}

// decodeAsBD decodes what spool printed into beads' own types (their field
// names and Go types, from beads v0.49.1's internal/types), refusing any
// field bd's type does not have.
func decodeAsBD(t *testing.T, path string) {
	target, ok := bdTypes[strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))]
	if !ok {
		t.Fatalf("no bd type for %s: add it to bdTypes", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	for {
		v := target()
		if err := dec.Decode(v); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s does not decode into bd's %T: %v", path, v, err)
		}
	}
}

// bdTypes is what bd marshals for each recorded command.
var bdTypes = map[string]func() any{
	"create":              func() any { return new(bdIssue) },
	"comment-add":         func() any { return new(bdComment) },
	"comments":            func() any { return new([]bdComment) },
	"update-notes":        func() any { return new([]bdIssue) },
	"update-claim":        func() any { return new([]bdIssue) },
	"update-blocked":      func() any { return new([]bdIssue) },
	"update-open":         func() any { return new([]bdIssue) },
	"close":               func() any { return new([]bdIssue) },
	"close-child":         func() any { return new([]bdIssue) },
	"reopen":              func() any { return new([]bdIssue) },
	"label-add":           func() any { return new([]map[string]string) },
	"label-remove":        func() any { return new([]map[string]string) },
	"label-list":          func() any { return new([]string) },
	"dep-add":             func() any { return new(map[string]string) },
	"dep-remove":          func() any { return new(map[string]string) },
	"dep-remove-missing":  func() any { return new(map[string]string) },
	"ready":               func() any { return new([]bdIssue) },
	"ready-label":         func() any { return new([]bdIssue) },
	"ready-unassigned":    func() any { return new([]bdIssue) },
	"list":                func() any { return new([]bdIssueWithCounts) },
	"list-open":           func() any { return new([]bdIssueWithCounts) },
	"show":                func() any { return new([]bdIssueDetails) },
	"show-blocked":        func() any { return new([]bdIssueDetails) },
	"show-missing":        func() any { return new(map[string]string) },
	"epic-close-eligible": func() any { return new([]bdEpicStatus) },
	"epic-close": func() any {
		return new(struct {
			Closed []string
			Count  int
		})
	},
	"export":             func() any { return new(bdIssue) },
	"dep-add-discovered": func() any { return new(map[string]string) },
	"show-typed":         func() any { return new([]bdIssueDetails) },
	"dep-tree":           func() any { return new([]bdTreeNode) },
	"blocked":            func() any { return new([]bdBlockedIssue) },
	"stats": func() any {
		return new(struct {
			Summary bdStatistics `json:"summary"`
		})
	},
	"label-list-all": func() any {
		return new([]struct {
			Label string `json:"label"`
			Count int    `json:"count"`
		})
	},
	"epic-status":     func() any { return new([]bdEpicStatus) },
	"search":          func() any { return new([]bdIssueWithCounts) },
	"children":        func() any { return new([]bdIssueWithCounts) },
	"list-parent":     func() any { return new([]bdIssueWithCounts) },
	"count":           func() any { return new(bdCount) },
	"count-open":      func() any { return new(bdCount) },
	"count-by-status": func() any { return new(bdGroupCounts) },
	"count-by-label":  func() any { return new(bdGroupCounts) },
	"stale":           func() any { return new([]bdIssue) },
	"stale-all":       func() any { return new([]bdIssue) },
	"show-quick":      func() any { return new([]bdIssueDetails) },
	"types": func() any {
		return new(struct {
			CoreTypes []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"core_types"`
		})
	},
}

// bdCount and bdGroupCounts are bd count's, without and with --by-*.
type bdCount struct {
	Count int `json:"count"`
}

type bdGroupCounts struct {
	Total  int `json:"total"`
	Groups []struct {
		Group string `json:"group"`
		Count int    `json:"count"`
	} `json:"groups"`
}

// bd's types, as beads v0.49.1 declares them (the fields spool can fill).
type bdIssue struct {
	ID                 string       `json:"id"`
	Title              string       `json:"title"`
	Description        string       `json:"description,omitempty"`
	Design             string       `json:"design,omitempty"`
	AcceptanceCriteria string       `json:"acceptance_criteria,omitempty"`
	Notes              string       `json:"notes,omitempty"`
	Status             string       `json:"status,omitempty"`
	Priority           int          `json:"priority"`
	IssueType          string       `json:"issue_type,omitempty"`
	Assignee           string       `json:"assignee,omitempty"`
	Owner              string       `json:"owner,omitempty"`
	CreatedAt          time.Time    `json:"created_at"`
	CreatedBy          string       `json:"created_by,omitempty"`
	UpdatedAt          time.Time    `json:"updated_at"`
	ClosedAt           *time.Time   `json:"closed_at,omitempty"`
	CloseReason        string       `json:"close_reason,omitempty"`
	Labels             []string     `json:"labels,omitempty"`
	Dependencies       []bdDep      `json:"dependencies,omitempty"`
	Comments           []*bdComment `json:"comments,omitempty"`
}

type bdDep struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
}

type bdComment struct {
	ID        int64     `json:"id"`
	IssueID   string    `json:"issue_id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

type bdIssueWithCounts struct {
	bdIssue             // bd embeds *Issue; decoding is the same
	DependencyCount int `json:"dependency_count"`
	DependentCount  int `json:"dependent_count"`
}

type bdIssueWithDependencyMetadata struct {
	bdIssue
	DependencyType string `json:"dependency_type"`
}

type bdIssueDetails struct {
	bdIssue
	Labels       []string                         `json:"labels,omitempty"`
	Dependencies []*bdIssueWithDependencyMetadata `json:"dependencies,omitempty"`
	Dependents   []*bdIssueWithDependencyMetadata `json:"dependents,omitempty"`
	Comments     []*bdComment                     `json:"comments,omitempty"`
	Parent       *string                          `json:"parent,omitempty"`
}

type bdEpicStatus struct {
	Epic             *bdIssue `json:"epic"`
	TotalChildren    int      `json:"total_children"`
	ClosedChildren   int      `json:"closed_children"`
	EligibleForClose bool     `json:"eligible_for_close"`
}

type bdTreeNode struct {
	bdIssue
	Depth     int    `json:"depth"`
	ParentID  string `json:"parent_id"`
	Truncated bool   `json:"truncated"`
}

type bdBlockedIssue struct {
	bdIssue
	BlockedByCount int      `json:"blocked_by_count"`
	BlockedBy      []string `json:"blocked_by"`
}

type bdStatistics struct {
	TotalIssues             int     `json:"total_issues"`
	OpenIssues              int     `json:"open_issues"`
	InProgressIssues        int     `json:"in_progress_issues"`
	ClosedIssues            int     `json:"closed_issues"`
	BlockedIssues           int     `json:"blocked_issues"`
	DeferredIssues          int     `json:"deferred_issues"`
	ReadyIssues             int     `json:"ready_issues"`
	TombstoneIssues         int     `json:"tombstone_issues"`
	PinnedIssues            int     `json:"pinned_issues"`
	EpicsEligibleForClosure int     `json:"epics_eligible_for_closure"`
	AverageLeadTime         float64 `json:"average_lead_time_hours"`
}

// bdVolatile are the values, by file and key, that measure how long the
// recording took (both runs close issues seconds after creating them):
// each must be a positive number, whatever its value.
var bdVolatile = map[string][]string{
	"stats.json": {"average_lead_time_hours"},
}

// volatile replaces the number at key (anywhere in docs) by <positive>,
// failing when it is not a positive number.
func volatile(t *testing.T, docs []any, key string) []any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case object:
			for _, k := range x.keys {
				if k != key {
					x.vals[k] = walk(x.vals[k])
					continue
				}
				n, ok := x.vals[k].(json.Number)
				if f, err := n.Float64(); !ok || err != nil || f <= 0 {
					t.Fatalf("%s is %v, not a positive number", key, x.vals[k])
				}
				x.vals[k] = "<positive>"
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	for i := range docs {
		docs[i] = walk(docs[i])
	}
	return docs
}

var (
	isoDate = regexp.MustCompile(`\d{4}-\d\d-\d\d( \d\d:\d\d)?`)
	bdTip   = regexp.MustCompile(`\n*💡 Tip: [^\n]*`)
)

// neutralText is a text output with its dates as <date> and without the
// tips bd prints at random (💡 Tip: ...).
func neutralText(s string) string {
	return isoDate.ReplaceAllString(bdTip.ReplaceAllString(s, ""), "<date>")
}

// lineDiff shows where two texts differ, line by line.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		mark := " "
		if wl != gl {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s bd:    %q\n%s spool: %q\n", mark, wl, mark, gl)
	}
	return b.String()
}

// bdExtras are the keys spool adds to bd's output, by file.
var bdExtras = map[string][]string{
	"create.json":             {"labels"}, // bd's create --json leaves out the labels it was given
	"show-missing.json":       {"code"},   // spool's error code
	"dep-remove-missing.json": {"code"},
	"show-quick.json":         {"owner", "created_by"}, // bd q records neither; spool records who made every issue
}

// readIDs reads record.sh's ids file: NAME=ID lines.
func readIDs(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, line := range strings.Fields(string(b)) {
		name, id, _ := strings.Cut(line, "=")
		ids[id] = "<" + name + ">"
	}
	return ids
}

var timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)

// neutral reads a recorded file with its ids as <A>, <B>, …; a JSONL
// file's lines are sorted (ids order them, and ids differ).
func neutral(t *testing.T, path string, ids map[string]string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	keys := make([]string, 0, len(ids))
	for id := range ids {
		keys = append(keys, id)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) }) // bd-09m.1 before bd-09m
	for _, id := range keys {
		s = strings.ReplaceAll(s, id, ids[id])
	}
	s = strings.TrimSpace(s)
	if strings.HasSuffix(path, ".jsonl") {
		lines := strings.Split(s, "\n")
		sort.Strings(lines)
		s = strings.Join(lines, "\n")
	}
	return s
}

// numberTimes replaces each distinct time in docs by <t1>, <t2>, … in
// order of first appearance, so that which times are equal survives the
// comparison (a dependency's created_at standing in for its blocker's would
// show). A dependency record's own created_at is <edge>: bd makes the
// record an instant after the issue it creates with --deps or --parent,
// spool in the same event, and neither is a time another field should have.
func numberTimes(docs []any) []any {
	tokens := map[string]string{}
	var walk func(v any, edge bool) any
	walk = func(v any, edge bool) any {
		switch x := v.(type) {
		case object:
			_, hasDep := x.vals["depends_on_id"]
			_, isTask := x.vals["dependency_type"]
			for _, k := range x.keys {
				if k == "created_at" && hasDep && !isTask {
					x.vals[k] = "<edge>"
					continue
				}
				x.vals[k] = walk(x.vals[k], false)
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i], false)
			}
			return x
		case string:
			if !timestamp.MatchString(x) {
				return x
			}
			if tokens[x] == "" {
				tokens[x] = fmt.Sprintf("<t%d>", len(tokens)+1)
			}
			return tokens[x]
		}
		return v
	}
	for i := range docs {
		docs[i] = walk(docs[i], false)
	}
	return docs
}

// jsonDocs decodes every JSON document in s, keeping object keys in order.
func jsonDocs(t *testing.T, s, name string) []any {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var docs []any
	for {
		v, err := ordered(dec)
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, s)
		}
		docs = append(docs, v)
	}
}

// object is a JSON object with its keys in order.
type object struct {
	keys []string
	vals map[string]any
}

func ordered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := object{vals: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := ordered(dec)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k.(string))
			o.vals[k.(string)] = v
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		var a []any
		for dec.More() {
			v, err := ordered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// sameJSON reports where got differs from want: a missing or moved key, a
// key want lacks (unless in extras), a different value or length.
func sameJSON(want, got any, at string, extras []string) error {
	switch w := want.(type) {
	case object:
		g, ok := got.(object)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", at, got)
		}
		var gotKeys []string
		for _, k := range g.keys {
			if _, inWant := w.vals[k]; inWant {
				gotKeys = append(gotKeys, k)
			} else if !contains(extras, k) {
				return fmt.Errorf("%s: spool has %q, bd does not", at, k)
			}
		}
		if strings.Join(gotKeys, ",") != strings.Join(w.keys, ",") {
			return fmt.Errorf("%s: keys %v, bd's %v", at, gotKeys, w.keys)
		}
		for _, k := range w.keys {
			if err := sameJSON(w.vals[k], g.vals[k], at+"."+k, extras); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d items, got %v", at, len(w), got)
		}
		for i := range w {
			if err := sameJSON(w[i], g[i], fmt.Sprintf("%s[%d]", at, i), extras); err != nil {
				return err
			}
		}
		return nil
	}
	if !bytes.Equal([]byte(fmt.Sprint(want)), []byte(fmt.Sprint(got))) {
		return fmt.Errorf("%s: %v, bd's %v", at, got, want)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
