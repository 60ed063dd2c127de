package plans

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxBytes is the largest proposal spool reads.
const MaxBytes = 1 << 20

// Task is one task of a plan-phase proposal.
type Task struct {
	Index       int    `json:"index"`
	Title       string `json:"title"`
	Description string `json:"description"`
	DependsOn   []int  `json:"depends_on"`
}

// PlanProposal is the planning agent's plan-phase output: tasks whose
// dependencies are indexes into the list, which spool turns into ids.
type PlanProposal struct {
	Tasks []Task `json:"tasks"`
}

// FeedbackTask is one task of a verify-phase proposal. Dependencies name
// existing task ids (not titles: a title is not unique).
type FeedbackTask struct {
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Priority     int      `json:"priority"`
	Dependencies []string `json:"dependencies"`
}

// FeedbackProposal is the planning agent's verify-phase output: feedback
// sorted into a category and a plan, with tasks to create; FeedbackID, when
// set, names the pending feedback it categorizes.
type FeedbackProposal struct {
	Category   string         `json:"category"`
	PlanID     string         `json:"mapped_plan_id"`
	Tasks      []FeedbackTask `json:"proposed_tasks"`
	FeedbackID string         `json:"feedback_id,omitempty"`
}

// SectionUpdate is one PRD section's new content.
type SectionUpdate struct {
	Section string `json:"section"`
	Content string `json:"content"`
	Entry   string `json:"change_log_entry"`
}

// PRDProposal is the planning agent's proposed PRD section updates, which
// spool applies and commits.
type PRDProposal struct {
	Updates []SectionUpdate `json:"section_updates"`
}

// DefaultPriority is a feedback task's priority when the proposal gives none.
const DefaultPriority = 2

// Canonical is a parsed proposal's JSON as spool re-encodes it, and Hash
// its content hash: the same proposal, however spaced or ordered, hashes the
// same.
func Canonical(p any) []byte {
	b, _ := json.Marshal(p) // plain structs: cannot fail
	return b
}

func Hash(p any) string {
	sum := sha256.Sum256(Canonical(p))
	return hex.EncodeToString(sum[:])
}

// ParsePlan reads and validates a plan-phase proposal whole: the indices
// unique, every dependency on an index the proposal has, no cycle, titles
// set, at most maxTasks tasks.
func ParsePlan(data []byte, maxTasks int) (PlanProposal, error) {
	var p PlanProposal
	root, err := decode(data)
	if err != nil {
		return p, err
	}
	err = object(root, "", map[string]field{
		"tasks": {true, func(v any, path string) error {
			return array(v, path, maxTasks, func(v any, path string) error {
				var t Task
				err := object(v, path, map[string]field{
					"index":       {true, func(v any, path string) (err error) { t.Index, err = integer(v, path, 0, -1); return }},
					"title":       {true, func(v any, path string) (err error) { t.Title, err = title(v, path); return }},
					"description": {false, func(v any, path string) (err error) { t.Description, err = str(v, path); return }},
					"depends_on": {false, func(v any, path string) error {
						t.DependsOn = []int{}
						return array(v, path, -1, func(v any, path string) error {
							n, err := integer(v, path, 0, -1)
							t.DependsOn = append(t.DependsOn, n)
							return err
						})
					}},
				})
				if t.DependsOn == nil {
					t.DependsOn = []int{}
				}
				p.Tasks = append(p.Tasks, t)
				return err
			})
		}},
	})
	if err != nil {
		return p, err
	}
	if p.Tasks == nil {
		p.Tasks = []Task{}
	}
	return p, checkPlan(p)
}

// checkPlan checks what spans tasks: unique indices, known dependencies, no
// cycle.
func checkPlan(p PlanProposal) error {
	if len(p.Tasks) == 0 {
		return Invalid("tasks", "a plan needs at least one task")
	}
	at := map[int]int{} // index → position
	for i, t := range p.Tasks {
		if j, dup := at[t.Index]; dup {
			return Invalid(fmt.Sprintf("tasks[%d].index", i), fmt.Sprintf("index %d is also tasks[%d]'s", t.Index, j))
		}
		at[t.Index] = i
	}
	for i, t := range p.Tasks {
		for j, d := range t.DependsOn {
			path := fmt.Sprintf("tasks[%d].depends_on[%d]", i, j)
			if _, ok := at[d]; !ok {
				return Invalid(path, fmt.Sprintf("no task has index %d", d))
			}
			if slices.Contains(t.DependsOn[:j], d) {
				return Invalid(path, fmt.Sprintf("index %d is named twice", d))
			}
		}
	}
	// A cycle: walk depth first; an edge back to a task on the stack closes it.
	const (
		unseen = iota
		onStack
		done
	)
	mark := make([]int, len(p.Tasks))
	var walk func(i int) error
	walk = func(i int) error {
		mark[i] = onStack
		for j, d := range p.Tasks[i].DependsOn {
			k := at[d]
			switch mark[k] {
			case onStack:
				return Invalid(fmt.Sprintf("tasks[%d].depends_on[%d]", i, j),
					fmt.Sprintf("index %d depending on %d closes a cycle", p.Tasks[i].Index, d))
			case unseen:
				if err := walk(k); err != nil {
					return err
				}
			}
		}
		mark[i] = done
		return nil
	}
	for i := range p.Tasks {
		if mark[i] == unseen {
			if err := walk(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseFeedback reads and validates a verify-phase proposal; whether its
// plan, feedback and dependencies exist is the decision's to check.
func ParseFeedback(data []byte, maxTasks int) (FeedbackProposal, error) {
	var p FeedbackProposal
	root, err := decode(data)
	if err != nil {
		return p, err
	}
	err = object(root, "", map[string]field{
		"category":       {true, func(v any, path string) (err error) { p.Category, err = title(v, path); return }},
		"mapped_plan_id": {true, func(v any, path string) (err error) { p.PlanID, err = title(v, path); return }},
		"feedback_id":    {false, func(v any, path string) (err error) { p.FeedbackID, err = title(v, path); return }},
		"proposed_tasks": {true, func(v any, path string) error {
			return array(v, path, maxTasks, func(v any, path string) error {
				t := FeedbackTask{Priority: DefaultPriority, Dependencies: []string{}}
				err := object(v, path, map[string]field{
					"title":       {true, func(v any, path string) (err error) { t.Title, err = title(v, path); return }},
					"description": {false, func(v any, path string) (err error) { t.Description, err = str(v, path); return }},
					"priority":    {false, func(v any, path string) (err error) { t.Priority, err = integer(v, path, 0, 4); return }},
					"dependencies": {false, func(v any, path string) error {
						return array(v, path, -1, func(v any, path string) error {
							id, err := title(v, path)
							if err == nil && slices.Contains(t.Dependencies, id) {
								err = Invalid(path, fmt.Sprintf("%s is named twice", id))
							}
							t.Dependencies = append(t.Dependencies, id)
							return err
						})
					}},
				})
				p.Tasks = append(p.Tasks, t)
				return err
			})
		}},
	})
	if p.Tasks == nil {
		p.Tasks = []FeedbackTask{}
	}
	return p, err
}

// ParsePRD reads and validates PRD section updates: at least one, each
// section named once.
func ParsePRD(data []byte) (PRDProposal, error) {
	var p PRDProposal
	root, err := decode(data)
	if err != nil {
		return p, err
	}
	err = object(root, "", map[string]field{
		"section_updates": {true, func(v any, path string) error {
			return array(v, path, -1, func(v any, path string) error {
				var u SectionUpdate
				err := object(v, path, map[string]field{
					"section":          {true, func(v any, path string) (err error) { u.Section, err = title(v, path); return }},
					"content":          {true, func(v any, path string) (err error) { u.Content, err = str(v, path); return }},
					"change_log_entry": {true, func(v any, path string) (err error) { u.Entry, err = title(v, path); return }},
				})
				if err == nil && slices.ContainsFunc(p.Updates, func(o SectionUpdate) bool { return o.Section == u.Section }) {
					err = Invalid(path+".section", fmt.Sprintf("section %q is updated twice", u.Section))
				}
				p.Updates = append(p.Updates, u)
				return err
			})
		}},
	})
	if err == nil && len(p.Updates) == 0 {
		err = Invalid("section_updates", "no section to update")
	}
	return p, err
}

// decode reads one JSON value, numbers kept as written.
func decode(data []byte) (any, error) {
	if len(data) > MaxBytes {
		return nil, Invalid("$", fmt.Sprintf("the proposal is %d bytes; at most %d (1 MiB) are read", len(data), MaxBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Invalid("$", "not JSON: "+err.Error())
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return nil, Invalid("$", fmt.Sprintf("more after the JSON value (offset %d)", off))
	}
	return v, nil
}

// field is a key an object may have: required, and how to read its value.
type field struct {
	required bool
	read     func(v any, path string) error
}

// object reads v as an object with exactly the keys fields knows, in the
// keys' order (so the first error is always the same one).
func object(v any, path string, fields map[string]field) error {
	m, ok := v.(map[string]any)
	if !ok {
		return Invalid(root(path), "want an object, got "+kind(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, known := fields[k]; !known {
			return Invalid(join(path, k), "unknown field")
		}
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		f := fields[k]
		val, ok := m[k]
		if !ok {
			if f.required {
				return Invalid(join(path, k), "missing")
			}
			continue
		}
		if err := f.read(val, join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

// array reads v as an array of at most limit items (-1: any number).
func array(v any, path string, limit int, item func(v any, path string) error) error {
	a, ok := v.([]any)
	if !ok {
		return Invalid(path, "want an array, got "+kind(v))
	}
	if limit >= 0 && len(a) > limit {
		return Invalid(path, fmt.Sprintf("%d items; at most %d (orchestrator.max_proposal_tasks)", len(a), limit))
	}
	for i, x := range a {
		if err := item(x, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

func str(v any, path string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", Invalid(path, "want a string, got "+kind(v))
	}
	return s, nil
}

// title is a string that must not be blank; it is trimmed.
func title(v any, path string) (string, error) {
	s, err := str(v, path)
	if err != nil {
		return "", err
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", Invalid(path, "empty")
	}
	return s, nil
}

// integer reads a whole number from lo to hi (hi < 0: no upper bound).
func integer(v any, path string, lo, hi int) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, Invalid(path, "want an integer, got "+kind(v))
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		return 0, Invalid(path, fmt.Sprintf("want an integer, got %s", n))
	}
	if i < lo || hi >= 0 && i > hi {
		if hi < 0 {
			return 0, Invalid(path, fmt.Sprintf("must be %d or more, got %d", lo, i))
		}
		return 0, Invalid(path, fmt.Sprintf("must be %d to %d, got %d", lo, hi, i))
	}
	return i, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func root(path string) string {
	if path == "" {
		return "$"
	}
	return path
}
