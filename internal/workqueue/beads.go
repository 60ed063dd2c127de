package workqueue

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/tidwall/gjson"
)

// What beads (bd) clients see: statuses as bd has them, ids resolved as bd
// resolves them, epics bd would close, and bd's JSONL export and import.

// Beads renders a task as bd shows it: a Blocked task (spool's blocked
// label) has bd's status "blocked", without the label.
func Beads(j TaskJSON) TaskJSON {
	if j.Status == StatusOpen && slices.Contains(j.Labels, BlockedLabel) {
		j.Status = StatusBlocked
		j.Labels = slices.DeleteFunc(slices.Clone(j.Labels), func(l string) bool { return l == BlockedLabel })
		if len(j.Labels) == 0 {
			j.Labels = nil
		}
	}
	return j
}

// BeadsStatuses are the statuses bd has that spool keeps (blocked is the
// blocked label); bd's pinned and hooked are read as open by an import, its
// tombstones skipped.
var BeadsStatuses = []string{StatusOpen, StatusInProgress, StatusBlocked, StatusDeferred, StatusClosed}

// CodeAmbiguousID is a partial id that matches more than one task.
var CodeAmbiguousID = fault.Register(fault.Usage, "ambiguous_id")

// ResolveID finds the task ref names, as bd does (its ResolvePartialID):
// the id itself; else, with "prefix-" taken off ref, the id prefix-ref; else
// the task whose id's hash part (after its first "-") is ref, or the one
// task whose hash part contains ref ("cka" and "sp-cka" find sp-ckaz).
func (s *State) ResolveID(prefix, ref string) (string, error) {
	if s.Task(ref) != nil {
		return ref, nil
	}
	hash := strings.TrimPrefix(ref, prefix+"-")
	if id := prefix + "-" + hash; s.Task(id) != nil {
		return id, nil
	}
	var exact, found []string
	if hash != "" {
		for id := range s.allTasks() {
			h := id
			if _, rest, ok := strings.Cut(id, "-"); ok {
				h = rest
			}
			if h == hash {
				exact = append(exact, id)
			} else if strings.Contains(h, hash) {
				found = append(found, id)
			}
		}
	}
	if len(exact) > 0 { // a whole hash wins over hashes that contain it
		found = exact
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", NoTask(ref)
	}
	sort.Strings(found)
	return "", fault.New(CodeAmbiguousID, nil, fmt.Sprintf("ambiguous ID %q matches %d issues: %v", ref, len(found), found),
		"id", ref, "matches", found)
}

// beadsWorkflowTypes are the issue types bd ready leaves out unless asked
// for by --type: items of bd's own workflows, not work to claim.
var beadsWorkflowTypes = []string{"merge-request", "gate", "molecule", "message", "agent", "role", "rig"}

// BeadsWorkflow reports whether bd ready leaves t out by default (bd's
// GetReadyWork): a workflow type, or an id of a molecule step or a wisp
// (bd's default ready.exclude_id_patterns).
func BeadsWorkflow(t *Task) bool {
	return slices.Contains(beadsWorkflowTypes, t.Type) || strings.Contains(t.ID, "-mol-") || strings.Contains(t.ID, "-wisp-")
}

// EpicStatus is bd's epic status: an open epic and how many of its
// children are closed. Epic carries the fields bd's query selects.
type EpicStatus struct {
	Epic             TaskJSON `json:"epic"`
	TotalChildren    int      `json:"total_children"`
	ClosedChildren   int      `json:"closed_children"`
	EligibleForClose bool     `json:"eligible_for_close"`
}

// EpicsEligible lists the open epics all of whose children (one at least)
// are closed, by priority then age, as bd epic close-eligible does.
func (s *State) EpicsEligible(p Policy, now time.Time) []EpicStatus {
	return slices.DeleteFunc(s.Epics(p, now), func(e EpicStatus) bool { return !e.EligibleForClose })
}

// Epics is bd epic status: every open epic with how many of its children
// are closed, by priority then age.
func (s *State) Epics(p Policy, now time.Time) []EpicStatus {
	counts := s.epicCounts()
	epics := make([]*Task, 0, len(counts))
	for id := range counts {
		epics = append(epics, s.Task(id))
	}
	sortTasks(epics)
	out := make([]EpicStatus, 0, len(epics))
	for _, t := range epics {
		v := Beads(s.View(t, p, now))
		epic := TaskJSON{ID: v.ID, Title: v.Title, Description: v.Description, Design: v.Design,
			AcceptanceCriteria: v.AcceptanceCriteria, Notes: v.Notes, Status: v.Status, Priority: v.Priority,
			IssueType: v.IssueType, Assignee: v.Assignee, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, ClosedAt: v.ClosedAt,
			ExternalRef: v.ExternalRef}
		n := counts[t.ID]
		out = append(out, EpicStatus{Epic: epic, TotalChildren: n[0], ClosedChildren: n[1], EligibleForClose: eligibleEpic(n)})
	}
	return out
}

// Export is every task as bd's JSONL export has it, by id: whole, with
// labels, dependencies and comments.
func (s *State) Export() []TaskJSON {
	ids := s.SortedIDs()
	out := make([]TaskJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, Beads(s.Task(id).Record()))
	}
	return out
}

// ExportEach calls fn with each record Export returns, in its order, with
// the ids given prefix to as RenamePrefix gives them (none for ""). A
// task the table holds is decoded for the call alone: fn must not keep
// the record. 100,000 tasks held whole peaked at 660 MiB.
func (s *State) ExportEach(to string, fn func(TaskJSON) error) error {
	var rename func(string) string
	if to != "" {
		var inOrder bool
		var err error
		if rename, inOrder, err = prefixRenamer(s.TaskIDs(), to); err != nil {
			return err
		}
		if !inOrder { // ids of several prefixes: the new ids sort otherwise
			recs := s.Export()
			if err := RenamePrefix(recs, to); err != nil {
				return err
			}
			for _, r := range recs {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for t := range s.eachTask(s.decodedIDs()) {
		if t == nil {
			continue
		}
		r := Beads(t.Record())
		if rename != nil {
			renameRecord(&r, rename)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// TaskIDs is every task's id, sorted, as SortedIDs, without decoding the
// table's tasks.
func (s *State) TaskIDs() []string {
	tt := s.trk.table()
	if tt == nil || s.trk.spill != nil {
		return s.SortedIDs()
	}
	ids := slices.Clone(tt.IDs)
	for id := range s.trk.m {
		if _, found := slices.BinarySearch(tt.IDs, id); !found {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// CodeInvalidImport is a line of an import that spool cannot take.
var CodeInvalidImport = fault.Register(fault.Usage, "invalid_import")

// knownFields are the issue fields an import keeps; others are reported.
var knownFields = map[string]bool{}

func init() {
	for _, f := range []string{"id", "title", "description", "design", "acceptance_criteria", "notes", "status", "priority",
		"issue_type", "assignee", "owner", "created_at", "created_by", "updated_at", "closed_at", "close_reason", "external_ref", "labels",
		"dependencies", "comments"} {
		knownFields[f] = true
	}
}

// ImportReport is what ParseJSONL left out or changed, for the caller to say.
type ImportReport struct {
	Dropped    []string // fields spool does not keep (bd's due_at, say), sorted
	Tombstones int      // issues bd deleted (status tombstone), skipped
	AsOpen     []string // "ID (status)" of issues in a status spool does not have (bd's pinned, hooked), read as open
}

// beadsOpenStatuses are bd statuses spool reads as open: a pinned issue
// stays open for good, a hooked one is on an agent's hook (claimed, with no
// claim spool could hold).
var beadsOpenStatuses = []string{"pinned", "hooked"}

// ParseJSONL reads a bd JSONL export: one issue per line, blank lines
// skipped, tombstones (issues bd deleted) skipped and counted.
func ParseJSONL(r io.Reader) (recs []TaskJSON, rep ImportReport, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	seen := map[string]bool{}
	ids := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fault.New(CodeInvalidImport, nil, fmt.Sprintf("line %d: %s", line, fmt.Sprintf(format, args...)), "line", line)
		}
		if !gjson.ValidBytes(b) || b[0] != '{' {
			return nil, ImportReport{}, bad("not a JSON object")
		}
		if gjson.GetBytes(b, "status").Str == "tombstone" {
			rep.Tombstones++
			continue
		}
		gjson.ParseBytes(b).ForEach(func(k, _ gjson.Result) bool {
			if !knownFields[k.Str] && !seen[k.Str] {
				seen[k.Str] = true
				rep.Dropped = append(rep.Dropped, k.Str)
			}
			return true
		})
		var rec TaskJSON
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, ImportReport{}, bad("%v", err)
		}
		if slices.Contains(beadsOpenStatuses, rec.Status) {
			rep.AsOpen = append(rep.AsOpen, fmt.Sprintf("%s (%s)", rec.ID, rec.Status))
			rec.Status = StatusOpen
		}
		if err := checkImported(&rec); err != nil {
			return nil, ImportReport{}, bad("%v", err)
		}
		if first, ok := ids[rec.ID]; ok {
			return nil, ImportReport{}, bad("%s is on line %d already", rec.ID, first)
		}
		ids[rec.ID] = line
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, ImportReport{}, fault.New(CodeInvalidImport, err, fmt.Sprintf("reading the import: %v", err))
	}
	sort.Strings(rep.Dropped)
	return recs, rep, nil
}

var importType = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z-]*$`) })

// checkImported refuses what spool could not show or claim.
func checkImported(r *TaskJSON) error {
	switch {
	case !ValidID(r.ID):
		return fmt.Errorf("id %q is not an id (letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d)", r.ID, MaxIDLength)
	case strings.TrimSpace(r.Title) == "":
		return fmt.Errorf("%s has no title", r.ID)
	case r.Priority < 0 || r.Priority > MaxPriority:
		return fmt.Errorf("%s: priority must be 0 to 4, got %d", r.ID, r.Priority)
	case r.CreatedAt.IsZero():
		return fmt.Errorf("%s has no created_at", r.ID)
	}
	if err := checkTimes(r); err != nil {
		return err
	}
	if r.Status == "" {
		r.Status = StatusOpen
	}
	if !slices.Contains(BeadsStatuses, r.Status) {
		return fmt.Errorf("%s: status %q is not one of %s", r.ID, r.Status, strings.Join(BeadsStatuses, ", "))
	}
	if r.IssueType == "" {
		r.IssueType = "task"
	}
	if !importType().MatchString(r.IssueType) {
		return fmt.Errorf("%s: issue_type %q is not a type", r.ID, r.IssueType)
	}
	for _, l := range r.Labels {
		if err := ValidateLabel(l); err != nil {
			return fmt.Errorf("%s: %v", r.ID, err)
		}
	}
	parents := 0
	for _, d := range r.Dependencies {
		switch {
		case d.IssueID != "" && d.IssueID != r.ID:
			return fmt.Errorf("%s: a dependency of %s is listed under it", r.ID, d.IssueID)
		case !ValidID(d.DependsOnID) || d.DependsOnID == r.ID:
			return fmt.Errorf("%s: dependency on %q", r.ID, d.DependsOnID)
		case !importType().MatchString(d.Type):
			return fmt.Errorf("%s: dependency type %q is not a type", r.ID, d.Type)
		case d.Type == DepParentChild:
			parents++
		}
	}
	if parents > 1 {
		return fmt.Errorf("%s has %d parents", r.ID, parents)
	}
	for _, c := range r.Comments {
		if c.IssueID != "" && c.IssueID != r.ID {
			return fmt.Errorf("%s: a comment of %s is listed under it", r.ID, c.IssueID)
		}
	}
	return nil
}

// Times spool keeps: nanoseconds since 1970 in an int64 (the snapshot's
// encoding), the least of them meaning none.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkTimes refuses a time spool could not keep (before 1678 or after 2262).
func checkTimes(r *TaskJSON) error {
	check := func(what string, t time.Time) error {
		if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
			return fmt.Errorf("%s: %s %s is out of range (1678-2262)", r.ID, what, t.Format(time.RFC3339))
		}
		return nil
	}
	errs := []error{check("created_at", r.CreatedAt), check("updated_at", r.UpdatedAt)}
	if r.ClosedAt != nil {
		errs = append(errs, check("closed_at", *r.ClosedAt))
	}
	for _, d := range r.Dependencies {
		errs = append(errs, check("the created_at of its dependency on "+d.DependsOnID, d.CreatedAt))
	}
	for _, c := range r.Comments {
		errs = append(errs, check(fmt.Sprintf("the created_at of comment %d", c.ID), c.CreatedAt))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// RenamePrefix gives every id in recs, references included, the prefix to
// (the part before the first "-"): what bd import asks of ids. recs end
// sorted by their new ids, as an export is. Two ids that would become one
// (a-x1 and b-x1) are refused, naming both.
func RenamePrefix(recs []TaskJSON, to string) error {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	rename, _, err := prefixRenamer(ids, to)
	if err != nil {
		return err
	}
	for i := range recs {
		renameRecord(&recs[i], rename)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return nil
}

// prefixRenamer is what gives ids prefix to, and whether the new ids sort
// as ids do (sorted); an error for a bad prefix, or two ids it makes one.
func prefixRenamer(ids []string, to string) (rename func(string) string, inOrder bool, _ error) {
	if !ValidPrefix(to) {
		return nil, false, fault.Usagef(CodeInvalidImport, "prefix %q must be 1-16 lowercase letters and digits, starting with a letter", to)
	}
	rename = func(id string) string {
		if _, rest, ok := strings.Cut(id, "-"); ok {
			return to + "-" + rest
		}
		return to + "-" + id
	}
	from := make(map[string]string, len(ids))
	inOrder = slices.IsSorted(ids)
	prev := ""
	for i, old := range ids {
		id := rename(old)
		if first, ok := from[id]; ok {
			return nil, false, fault.New(CodeInvalidImport, nil,
				fmt.Sprintf("--prefix %s would make %s and %s the same id, %s", to, first, old, id), "ids", []string{first, old})
		}
		from[id] = old
		inOrder = inOrder && (i == 0 || prev < id)
		prev = id
	}
	return rename, inOrder, nil
}

// renameRecord gives r's ids, and those its dependencies and comments
// name, the new names.
func renameRecord(r *TaskJSON, rename func(string) string) {
	r.ID = rename(r.ID)
	for j := range r.Dependencies {
		d := &r.Dependencies[j]
		d.IssueID, d.DependsOnID = rename(d.IssueID), rename(d.DependsOnID)
	}
	for j := range r.Comments {
		r.Comments[j].IssueID = rename(r.Comments[j].IssueID)
	}
}

// ImportTasks decides task.imported for each record that differs from the
// task spool has: importing the same export twice appends nothing.
func ImportTasks(s *State, recs []TaskJSON) ([]eventlog.Draft, error) {
	var drafts []eventlog.Draft
	for _, r := range recs {
		d := importedData(r)
		want, err := json.Marshal(Beads(NewState().imported(r.ID, &d).Record()))
		if err != nil {
			return nil, err
		}
		if t := s.Task(r.ID); t != nil {
			have, err := json.Marshal(Beads(t.Record()))
			if err != nil {
				return nil, err
			}
			if bytes.Equal(have, want) {
				continue
			}
		}
		drafts = append(drafts, eventlog.Draft{Type: TypeImported, Subject: r.ID, Data: d})
	}
	return drafts, nil
}

func importedData(r TaskJSON) ImportedData {
	d := ImportedData{Title: r.Title, Description: r.Description, Design: r.Design, AcceptanceCriteria: r.AcceptanceCriteria,
		Notes: r.Notes, Status: r.Status, Priority: r.Priority, IssueType: r.IssueType, Assignee: r.Assignee,
		Owner: &r.Owner, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy, UpdatedAt: r.UpdatedAt.UTC(),
		CloseReason: r.CloseReason, ExternalRef: r.ExternalRef, Labels: NormLabels(r.Labels)}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	if r.ClosedAt != nil {
		at := r.ClosedAt.UTC()
		d.ClosedAt = &at
	}
	for _, dep := range r.Dependencies {
		x := ImportedDep{ID: dep.DependsOnID, At: dep.CreatedAt.UTC(), By: dep.CreatedBy}
		switch dep.Type {
		case DepParentChild:
			d.Parent = &x
		case DepBlocks:
			d.Blockers = append(d.Blockers, x)
		default:
			d.Links = append(d.Links, Link{ID: x.ID, Type: dep.Type, At: x.At, By: x.By})
		}
	}
	sort.Slice(d.Blockers, func(i, j int) bool { return d.Blockers[i].ID < d.Blockers[j].ID })
	for _, c := range r.Comments {
		d.Comments = append(d.Comments, ImportedNote{ID: c.ID, Author: c.Author, Text: c.Text, At: c.CreatedAt.UTC()})
	}
	return d
}

// BeadsDetail is Beads for bd show's items: the task (its labels are the
// detail's) and every related task.
func BeadsDetail(d DetailJSON) DetailJSON {
	t := d.TaskJSON
	t.Labels = d.Labels
	t = Beads(t)
	d.TaskJSON, d.Labels = t, t.Labels
	d.TaskJSON.Labels = nil
	for _, list := range [][]RelatedJSON{d.Dependencies, d.Dependents} {
		for i := range list {
			list[i].TaskJSON = Beads(list[i].TaskJSON)
		}
		// bd orders each by priority (its ORDER BY i.priority)
		sort.SliceStable(list, func(i, j int) bool { return list[i].Priority < list[j].Priority })
	}
	return d
}

// BeadsOrder returns tasks in the order of one of bd ready's sort
// policies, only the first limit of them when limit > 0: "priority" by
// priority then age; "oldest" by age; "hybrid" (bd's default) puts tasks
// created in the 48 hours before now first, by priority, then the older
// ones by age.
func BeadsOrder(ts []*Task, policy string, now time.Time, limit int) ([]*Task, error) {
	less, err := beadsLess(policy, now)
	if err != nil {
		return nil, err
	}
	return topK(ts, limit, less), nil
}

// beadsLess is the order of one of bd ready's sort policies (BeadsOrder).
func beadsLess(policy string, now time.Time) (func(a, b *Task) bool, error) {
	switch policy {
	case "hybrid", "", "priority", "oldest":
	default:
		return nil, fault.Usagef(fault.CodeUsage, "sort policy %q is not one of hybrid, priority, oldest", policy)
	}
	less := beadsKeyLess(policy, now)
	return func(a, b *Task) bool { return less(beadsKeyOf(a), beadsKeyOf(b)) }, nil
}

// beadsKeyLess is bd ready's order on the keys a table keeps of its open
// tasks (their times as the index orders them: a fold keeps only times an
// int64 of nanoseconds holds, so these order as the times do).
func beadsKeyLess(policy string, now time.Time) func(a, b beadsKey) bool {
	byPriority := func(a, b beadsKey) bool {
		if a.priority != b.priority {
			return a.priority < b.priority
		}
		if a.created != b.created {
			return a.created < b.created
		}
		return a.id < b.id
	}
	oldest := func(a, b beadsKey) bool {
		if a.created != b.created {
			return a.created < b.created
		}
		return a.id < b.id
	}
	switch policy {
	case "priority":
		return byPriority
	case "oldest":
		return oldest
	}
	cut := now.Add(-48 * time.Hour).UnixNano()
	return func(a, b beadsKey) bool {
		ra, rb := a.created >= cut, b.created >= cut
		switch {
		case ra != rb:
			return ra
		case ra:
			return byPriority(a, b)
		}
		return oldest(a, b)
	}
}
