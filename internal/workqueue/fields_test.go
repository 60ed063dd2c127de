package workqueue

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue/internal/fieldgen"
	"github.com/spoolhq/spool/projections"
)

var updatePinned = flag.Bool("update", false, "re-record testdata/encoders.golden (TestEncodersPinned)")

// fields_gen.go is what fieldgen generates from its table and the
// declarations as they are: a field added to one and not generated shows
// here, and so does a field of Task or TaskDetail the table leaves out.
func TestFieldsGenerated(t *testing.T) {
	want, err := fieldgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(fieldgen.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./internal/workqueue/", fieldgen.Output)
	}
}

// pinnedText has every character class the encoders treat apart: quotes,
// a backslash, HTML (escapeHTML), control characters, a line break, a
// multi-byte rune, U+2028.
const pinnedText = "naïve \"quoted\" \\ <b>&amp;</b>\t\x01\nline\u2028end"

// pinnedEvents set every field of Task, TaskDetail and Entry in at least
// one task (TestEncodersPinned checks that they do).
func pinnedEvents(t *testing.T) []*eventlog.Event {
	t.Helper()
	at := time.Date(2026, 4, 1, 9, 0, 0, 123456789, time.UTC)
	var out []*eventlog.Event
	add := func(typ, id, actor string, data any) string {
		at = at.Add(time.Minute)
		e, err := eventlog.Draft{Type: typ, Subject: id, Data: data}.Event(actor, at)
		if err != nil {
			t.Fatal(err)
		}
		e.Writer, e.Seq, e.LC = "clone-a", uint64(len(out)+1), uint64(len(out)+1)
		e.ID = fmt.Sprintf("ev-%03d", e.Seq)
		out = append(out, e)
		return e.ID
	}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	ada, bob := "ada@example.com", "bob@example.com"

	// sp-a: every field a creation sets, updated, commented, closed.
	add(TypeCreated, "sp-a", ada, CreatedData{Title: "first " + pinnedText, Description: "description " + pinnedText,
		Design: "design", Acceptance: "acceptance", Notes: "notes", ExternalRef: "gh-9", Assignee: "carol",
		Owner: "owner@example.com", Priority: 1, IssueType: "feature", Labels: []string{"backend", "<x>"}})
	add(TypeUpdated, "sp-a", bob, UpdatedData{Notes: str("notes, updated"), Priority: num(2), AddLabels: []string{"perf"}})
	add(TypeCommented, "sp-a", bob, CommentData{Text: "a comment " + pinnedText})
	add(TypeCommented, "sp-a", ada, CommentData{Text: "another"})
	add(TypeClosed, "sp-a", ada, ClosedData{Reason: "done " + pinnedText})

	// sp-b: a parent set later, a blocker, a link, a claim held.
	add(TypeCreated, "sp-b", ada, CreatedData{Title: "second", Priority: 3, IssueType: "task", Deps: []string{"sp-a"}})
	add(TypeReparented, "sp-b", bob, ParentData{Parent: "sp-a"})
	add(TypeDepAdded, "sp-b", bob, DepData{Blocker: "sp-c", Type: "related"})

	// sp-c: imported whole, with a parent, a blocker, a link and comments.
	closed := at.Add(-time.Hour)
	owner := "imported-owner"
	add(TypeImported, "sp-c", ada, ImportedData{Title: "imported", Description: "d", Design: "g", AcceptanceCriteria: "ac",
		Notes: "n", Status: StatusClosed, Priority: 4, IssueType: "bug", Assignee: "dave", Owner: &owner,
		CreatedAt: at.Add(-48 * time.Hour), CreatedBy: "erin", UpdatedAt: at.Add(-2 * time.Hour), ClosedAt: &closed,
		CloseReason: "fixed", ExternalRef: "jira-ABC", Labels: []string{"imported"},
		Parent:   &ImportedDep{ID: "sp-a", At: at.Add(-47 * time.Hour), By: "erin"},
		Blockers: []ImportedDep{{ID: "sp-a", At: at.Add(-46 * time.Hour), By: "frank"}},
		Links:    []Link{{ID: "sp-b", Type: "discovered-from", At: at.Add(-45 * time.Hour), By: "gina"}},
		Comments: []ImportedNote{{ID: 7, Author: "erin", Text: "imported " + pinnedText, At: at.Add(-44 * time.Hour)}}})

	// sp-d: two failures (the second requeues), a demotion, a claim held.
	add(TypeCreated, "sp-d", ada, CreatedData{Title: "worked", Priority: 2, IssueType: "task"})
	add(TypeClaimed, "sp-d", "worker-1", ClaimedData{Attempt: 1, Worker: "w1", LeaseUntil: at.Add(time.Hour), Priority: 2, Source: "spool"})
	add(TypeFailed, "sp-d", "worker-1", FailedData{Attempt: 1, Error: "exit 1: " + pinnedText})
	add(TypeClaimed, "sp-d", "worker-1", ClaimedData{Attempt: 2, Worker: "w1", LeaseUntil: at.Add(time.Hour), Priority: 2, Source: "spool"})
	add(TypeFailed, "sp-d", "worker-1", FailedData{Attempt: 2, Error: "exit 2"})
	add(TypeDemoted, "sp-d", "worker-1", DemotedData{From: 2, To: 3, Failures: 2})
	add(TypeClaimed, "sp-d", "worker-2", ClaimedData{Attempt: 3, Worker: "w2", LeaseUntil: at.Add(2 * time.Hour), Priority: 3, Source: "spool"})

	// sp-e: blocked with a reason, syncs pending and given up, a hook started.
	add(TypeCreated, "sp-e", ada, CreatedData{Title: "blocked", Priority: 0, IssueType: "chore"})
	add(TypeClaimed, "sp-e", "worker-1", ClaimedData{Attempt: 1, Worker: "w1", LeaseUntil: at.Add(time.Hour), Source: "spool"})
	add(TypeFailed, "sp-e", "worker-1", FailedData{Attempt: 1, Error: "exit 3"})
	add(TypeBlocked, "sp-e", "worker-1", BlockedData{TaskID: "sp-e", TotalAttempts: 1, LastFailureReason: "exit 3", Reason: "waits on " + pinnedText})
	failed := add(TypeSyncRequested, "sp-e", "worker-1", SyncData{Op: "label_add", Label: BlockedLabel})
	add(TypeSyncFailed, "sp-e", "worker-1", SyncFailedData{Request: failed, Error: "bd: busy"})
	add(TypeSyncRequested, "sp-e", "worker-1", SyncData{Op: "priority", Priority: num(4), Reason: "r"})
	gaveUp := add(TypeSyncRequested, "sp-e", "worker-1", SyncData{Op: "close", Reason: "closing", Label: "l", Priority: num(0)})
	add(TypeSyncFailed, "sp-e", "worker-1", SyncFailedData{Request: gaveUp, Error: "bd: " + pinnedText})
	add(TypeSyncFailed, "sp-e", "worker-1", SyncFailedData{Request: gaveUp, Error: "bd: refused", GaveUp: true})
	hook := add(TypeHookRequested, "sp-e", "worker-1", HookRequestedData{Hook: "on_blocked", Event: TypeBlocked, Data: json.RawMessage(`{"reason":"x"}`)})
	add(TypeHookStarted, "sp-e", "worker-1", HookRequestData{Request: hook})
	add(TypeHookRequested, "sp-e", "worker-1", HookRequestedData{Hook: "on_abandoned", Event: TypeAbandoned, Data: json.RawMessage(`{}`)})
	return out
}

// pinnedOutputs are each encoder's output on pinnedEvents, with the
// version of the projection whose snapshot holds it.
func pinnedOutputs(t *testing.T, events []*eventlog.Event, spill string) (map[string][]byte, map[string]int) {
	t.Helper()
	tasks, queue := NewTasksProjection(NewState()), NewQueueProjection(NewState())
	if spill != "" {
		if err := tasks.Spill(spill); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range events {
		for _, p := range []projections.Projection{tasks, queue} {
			if err := p.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := map[string][]byte{}
	tasks.Freeze()
	queue.Freeze()
	for _, c := range []struct {
		name string
		p    interface {
			projections.FileWriter
			MarshalState() ([]byte, error)
		}
	}{{Spec.Name, tasks}, {QueueSpec.Name, queue}} {
		name, p := c.name, c.p
		b, err := p.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		out[name+" table"] = b
		err = p.WriteFiles(func(path string, _ bool, write func(io.Writer) error) error {
			var buf bytes.Buffer
			err := write(&buf)
			out[name+" "+path] = buf.Bytes()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	versions := map[string]int{}
	for name := range out {
		versions[name] = Spec.Version
		if strings.HasPrefix(name, QueueSpec.Name+" ") {
			versions[name] = QueueSpec.Version
		}
	}
	return out, versions
}

// Each encoder's output on a fixed input that sets every field (the
// tasks' table and tasks.json, the history's table and history.json)
// hashes as testdata/encoders.golden records for the projection's version:
// an output that changes needs the projection's Spec.Version bumped, so
// that snapshots in the old format are rebuilt, not misread (and the
// table's magic, tasksMagic or queueMagic). After the bump, re-record:
// go test ./internal/workqueue/ -run TestEncodersPinned -update
//
// The same input is folded through the spill, decoded back and written
// again: each of those must give the same bytes.
func TestEncodersPinned(t *testing.T) {
	events := pinnedEvents(t)
	out, versions := pinnedOutputs(t, events, "")
	checkEveryFieldSet(t, events)

	spilled, _ := pinnedOutputs(t, events, t.TempDir())
	for name, b := range out {
		if !bytes.Equal(spilled[name], b) {
			t.Errorf("%s: the spilled fold writes other bytes", name)
		}
	}
	for _, name := range []string{Spec.Name, QueueSpec.Name} {
		var p interface {
			projections.Projection
			MarshalState() ([]byte, error)
			UnmarshalState([]byte) error
		} = NewTasksProjection(NewState())
		if name == QueueSpec.Name {
			p = NewQueueProjection(NewState())
		}
		if err := p.UnmarshalState(out[name+" table"]); err != nil {
			t.Fatal(err)
		}
		s := p.(interface{ State() *State }).State()
		s.allHistory()
		for _, task := range s.allTasks() {
			task.Detail() // decoded, to be encoded again
		}
		again, err := p.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, out[name+" table"]) {
			t.Errorf("%s table: decoded and written again, it differs at byte %d", name, diffAt(again, out[name+" table"]))
		}
	}

	golden := filepath.Join("testdata", "encoders.golden")
	if *updatePinned {
		var b strings.Builder
		b.WriteString("# TestEncodersPinned: each encoder's output on a fixed input, hashed (sha256),\n")
		b.WriteString("# with the version of the projection it belongs to. Re-record only after bumping\n")
		b.WriteString("# that version: go test ./internal/workqueue/ -run TestEncodersPinned -update\n")
		for _, name := range sortedKeys(out) {
			sum := sha256.Sum256(out[name])
			fmt.Fprintf(&b, "%s\t%d\t%s\n", name, versions[name], hex.EncodeToString(sum[:]))
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recorded := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("%s: a line not name, version, hash: %q", golden, line)
		}
		name, hash := fields[0], fields[2]
		version, err := strconv.Atoi(fields[1])
		if err != nil {
			t.Fatalf("%s: %q: %v", golden, line, err)
		}
		recorded[name] = true
		b, ok := out[name]
		if !ok {
			t.Errorf("%s: %s is no encoder's output now; re-record with -update", golden, name)
			continue
		}
		sum := sha256.Sum256(b)
		changed := hex.EncodeToString(sum[:]) != hash
		switch {
		case version == versions[name] && changed:
			t.Errorf("%s: the output changed, and its projection's version is still %d: bump it (and the table's magic), then re-record with -update", name, version)
		case version != versions[name]:
			t.Errorf("%s: recorded for version %d, the projection is at %d: re-record with -update", name, version, versions[name])
		}
	}
	for _, name := range sortedKeys(out) {
		if !recorded[name] {
			t.Errorf("%s: %s is not recorded: re-record with -update", golden, name)
		}
	}
}

// checkEveryFieldSet fails when a field of Task, TaskDetail, Entry or
// the structs they hold is zero in every task of the fold: pinnedEvents
// must set a new field too, or its encoding goes unpinned.
func checkEveryFieldSet(t *testing.T, events []*eventlog.Event) {
	t.Helper()
	s := NewState()
	for _, e := range events {
		s.Apply(e)
	}
	set := map[string]bool{}
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			name := prefix + "." + f.Name
			if f.Anonymous {
				walk(prefix, fv)
				continue
			}
			if !fv.IsZero() {
				set[name] = true
			} else if _, seen := set[name]; !seen {
				set[name] = false
			}
			if fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct {
				for j := range fv.Len() {
					walk(name, fv.Index(j))
				}
			}
		}
	}
	comments := 0
	for _, task := range s.allTasks() {
		walk("Task", reflect.ValueOf(*task))
		x := task.Detail()
		walk("TaskDetail", reflect.ValueOf(*x))
		comments += x.numComments
	}
	for _, h := range s.allHistory() {
		walk("Entry", reflect.ValueOf(*h))
	}
	for _, name := range sortedKeys(set) {
		if !set[name] {
			t.Errorf("%s is not set by pinnedEvents: set it, so that its encoding is pinned", name)
		}
	}
	if comments == 0 {
		t.Error("no comments in pinnedEvents' fold")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The checks that an update sets nothing name its fields one by one:
// each field set alone makes the update not empty (and, but for the
// labels, not labels only).
func TestEmptyChecksSeeEveryField(t *testing.T) {
	fill := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			p := reflect.New(v.Type().Elem())
			switch p.Elem().Kind() {
			case reflect.String:
				p.Elem().SetString("x")
			case reflect.Int:
				p.Elem().SetInt(1)
			}
			v.Set(p)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(1)
		default:
			t.Fatalf("a field of kind %s: teach this test to set it", v.Kind())
		}
	}
	typ := reflect.TypeFor[Update]()
	for i := range typ.NumField() {
		var u Update
		fill(reflect.ValueOf(&u).Elem().Field(i))
		if u.Empty() {
			t.Errorf("Update.Empty: true with %s set", typ.Field(i).Name)
		}
	}
	typ = reflect.TypeFor[UpdatedData]()
	for i := range typ.NumField() {
		var d UpdatedData
		fill(reflect.ValueOf(&d).Elem().Field(i))
		name := typ.Field(i).Name
		if d.empty() {
			t.Errorf("UpdatedData.empty: true with %s set", name)
		}
		if labels := strings.HasSuffix(name, "Labels"); d.labelsOnly() != labels {
			t.Errorf("UpdatedData.labelsOnly: %v with %s set", !labels, name)
		}
	}
}

// diffAt is where a and b first differ.
func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
