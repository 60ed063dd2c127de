package workqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/projections"
)

// setStatus applies SetStatus as actor and returns the event types it made.
func (w *world) setStatus(p Policy, id, to, actor string, at time.Time) ([]string, error) {
	w.t.Helper()
	drafts, err := SetStatus(w.s, p, id, to, actor, actor, "", at)
	if err != nil {
		return nil, err
	}
	w.apply(actor, at, drafts...)
	var types []string
	for _, d := range drafts {
		types = append(types, d.Type)
	}
	return types, nil
}

// Each bd status maps onto the queue's events, from each state a task can be in.
func TestSetStatus(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	type step struct {
		actor, to string
		want      []string // event types; nil: none
		code      string   // an error's code instead
		status    string   // the task's bd status after the step
		history   string   // its queue status after the step ("" when it has none)
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"claim, then finish as the claimant: a success", []step{
			{"ada", StatusInProgress, []string{TypeClaimed}, "", StatusInProgress, HistWorking},
			{"ada", StatusInProgress, nil, "", StatusInProgress, HistWorking}, // own claim: no-op
			{"bob", StatusInProgress, nil, CodeAlreadyClaimed.Name, StatusInProgress, HistWorking},
			{"ada", StatusClosed, []string{TypeSucceeded, TypeClosed}, "", StatusClosed, HistCompleted},
			{"ada", StatusClosed, nil, "", StatusClosed, HistCompleted}, // closed stays closed
			{"ada", StatusInProgress, nil, fault.CodeInvalidStateTransition.Name, StatusClosed, HistCompleted},
			{"ada", StatusOpen, []string{TypeReopened}, "", StatusOpen, HistPending},
		}},
		{"claim, then give it back", []step{
			{"ada", StatusInProgress, []string{TypeClaimed}, "", StatusInProgress, HistWorking},
			{"bob", StatusOpen, nil, fault.CodeUnauthorized.Name, StatusInProgress, HistWorking},
			{"ada", StatusOpen, []string{TypeReleased}, "", StatusOpen, HistPending},
			{"bob", StatusInProgress, []string{TypeClaimed}, "", StatusInProgress, HistWorking},
		}},
		{"close by someone else, under a live claim: refused", []step{
			{"ada", StatusInProgress, []string{TypeClaimed}, "", StatusInProgress, HistWorking},
			{"bob", StatusClosed, nil, fault.CodeUnauthorized.Name, StatusInProgress, HistWorking},
			{"ada", StatusClosed, []string{TypeSucceeded, TypeClosed}, "", StatusClosed, HistCompleted},
		}},
		{"blocked is the Blocked label; open or a claim lifts it", []step{
			{"ada", StatusBlocked, []string{TypeBlocked}, "", StatusBlocked, HistBlocked},
			{"ada", StatusBlocked, nil, "", StatusBlocked, HistBlocked},
			{"ada", StatusOpen, []string{TypeUnblocked}, "", StatusOpen, HistPending},
			{"ada", StatusBlocked, []string{TypeBlocked}, "", StatusBlocked, HistBlocked},
			{"ada", StatusInProgress, []string{TypeUnblocked, TypeClaimed}, "", StatusInProgress, HistWorking},
			{"ada", StatusBlocked, []string{TypeReleased, TypeBlocked}, "", StatusBlocked, HistBlocked},
		}},
		{"deferred", []step{
			{"ada", StatusDeferred, []string{TypeUpdated}, "", StatusDeferred, ""},
			{"ada", StatusDeferred, nil, "", StatusDeferred, ""},
			{"ada", StatusOpen, []string{TypeUpdated}, "", StatusOpen, ""},
			{"ada", StatusInProgress, []string{TypeClaimed}, "", StatusInProgress, HistWorking},
			{"ada", StatusDeferred, nil, fault.CodeInvalidStateTransition.Name, StatusInProgress, HistWorking},
		}},
		{"a status bd has and spool does not", []step{
			{"ada", "hooked", nil, CodeInvalidStatus.Name, StatusOpen, ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.add("a task", 1, t0)
			for i, s := range tc.steps {
				got, err := w.setStatus(p, id, s.to, s.actor, t0.Add(time.Duration(i)*time.Minute))
				if s.code != "" {
					if code := fault.Classify(err).Code; code != s.code {
						t.Fatalf("step %d (%s → %s): error %v (%s), want %s", i, s.actor, s.to, err, code, s.code)
					}
				} else if err != nil || !slices.Equal(got, s.want) {
					t.Fatalf("step %d (%s → %s): %v %v, want %v", i, s.actor, s.to, got, err, s.want)
				}
				if st := Beads(w.s.View(w.s.trk.m[id], p, t0)).Status; st != s.status {
					t.Fatalf("step %d: status %s, want %s", i, st, s.status)
				}
				hist := ""
				if h := w.s.hst.m[id]; h != nil {
					hist = string(h.Status)
					if h.Blocked {
						hist = HistBlocked
					}
				}
				if hist != s.history {
					t.Fatalf("step %d: history %q, want %q", i, hist, s.history)
				}
			}
		})
	}
}

// A claim by name counts attempts like next, and an expired lease is
// recorded before it, so another actor may claim after it runs out.
func TestClaimTaskAfterExpiry(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	id := w.add("a task", 1, t0)
	d, err := ClaimTask(w.s, p, id, "ada", "ada", t0)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, d...)
	later := t0.Add(p.Lease)
	d, err = ClaimTask(w.s, p, id, "bob", "bob", later)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 2 || d[0].Type != TypeLeaseExpired || d[1].Type != TypeClaimed || d[1].Data.(ClaimedData).Attempt != 2 {
		t.Fatalf("drafts %+v", d)
	}
	if _, err := ClaimTask(w.s, p, "sp-none", "bob", "bob", later); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("claim of a missing task: %v", err)
	}
}

// Ids resolve as bd's ResolvePartialID resolves them.
func TestResolveID(t *testing.T) {
	t.Parallel()
	s := NewState()
	for _, id := range []string{"sp-4mx5", "sp-4mzz", "sp-a1", "bd-6c2", "bd-6c2.1", "sp-ckaz", "bd-ckq"} {
		s.trk.m[id] = &Task{ID: id}
	}
	for _, tc := range []struct{ ref, want, code string }{
		{"sp-4mx5", "sp-4mx5", ""},
		{"4mx5", "sp-4mx5", ""},          // the prefix added
		{"4mx", "sp-4mx5", ""},           // the start of one hash
		{"mz", "sp-4mzz", ""},            // a part of one hash
		{"zz", "sp-4mzz", ""},            // its end
		{"sp-cka", "sp-ckaz", ""},        // "sp-" taken off, then a part
		{"cka", "sp-ckaz", ""},           //
		{"ck", "", CodeAmbiguousID.Name}, // sp-ckaz and bd-ckq
		{"4m", "", CodeAmbiguousID.Name},
		{"6c2", "bd-6c2", ""}, // a whole hash (of another prefix) wins over bd-6c2.1's
		{"6c2.1", "bd-6c2.1", ""},
		{"bd-6c2", "bd-6c2", ""},
		{"a1", "sp-a1", ""},
		{"qq", "", fault.CodeNotFound.Name},
		{"sp-", "", fault.CodeNotFound.Name},
		{"", "", fault.CodeNotFound.Name},
	} {
		got, err := s.ResolveID("sp", tc.ref)
		if got != tc.want || tc.code != "" && fault.Classify(err).Code != tc.code || tc.code == "" && err != nil {
			t.Errorf("ResolveID(%q) = %q, %v; want %q %s", tc.ref, got, err, tc.want, tc.code)
		}
		if tc.code == fault.CodeNotFound.Name && !errors.Is(err, ErrNoTask) {
			t.Errorf("ResolveID(%q): %v is not ErrNoTask", tc.ref, err)
		}
	}
}

func TestEpicsEligible(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	epic := func(title string, children ...bool) string {
		d, id, err := AddTask(w.s, NewTask{Title: title, Type: "epic"}, "sp", "w", t0)
		if err != nil {
			t.Fatal(err)
		}
		w.apply("ada", t0, d)
		for _, closed := range children {
			d, child, err := AddTask(w.s, NewTask{Title: title + " child", Parent: id}, "sp", "w", t0)
			if err != nil {
				t.Fatal(err)
			}
			w.apply("ada", t0, d)
			if closed {
				w.apply("ada", t0, eventlog.Draft{Type: TypeClosed, Subject: child, Data: ClosedData{}})
			}
		}
		return id
	}
	done := epic("all closed", true, true)
	epic("one open", true, false)
	epic("no children")
	closedEpic := epic("closed itself", true)
	w.apply("ada", t0, eventlog.Draft{Type: TypeClosed, Subject: closedEpic, Data: ClosedData{}})
	got := w.s.EpicsEligible(p, t0)
	if len(got) != 1 || got[0].Epic.ID != done || got[0].TotalChildren != 2 || got[0].ClosedChildren != 2 || !got[0].EligibleForClose {
		t.Fatalf("eligible %+v", got)
	}
	if got[0].Epic.Owner != "" || got[0].Epic.CreatedBy != "" {
		t.Fatal("bd's epic status carries only the columns its query selects")
	}
}

func TestBeadsOrder(t *testing.T) {
	t.Parallel()
	now := t0.Add(72 * time.Hour)
	old1 := &Task{ID: "old1", Priority: 3, CreatedAt: t0}
	old0 := &Task{ID: "old0", Priority: 0, CreatedAt: t0.Add(time.Hour)}
	new2 := &Task{ID: "new2", Priority: 2, CreatedAt: now.Add(-time.Hour)}
	new1 := &Task{ID: "new1", Priority: 1, CreatedAt: now.Add(-2 * time.Hour)}
	for _, tc := range []struct {
		policy string
		want   string
	}{
		{"hybrid", "new1 new2 old1 old0"},
		{"priority", "old0 new1 new2 old1"},
		{"oldest", "old1 old0 new1 new2"},
	} {
		ts, err := BeadsOrder([]*Task{old0, new2, old1, new1}, tc.policy, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		if top, _ := BeadsOrder([]*Task{old0, new2, old1, new1}, tc.policy, now, 2); len(top) != 2 || top[0] != ts[0] || top[1] != ts[1] {
			t.Errorf("%s: the first two are not the sorted list's", tc.policy)
		}
		var ids []string
		for _, x := range ts {
			ids = append(ids, x.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.policy, got, tc.want)
		}
	}
	if _, err := BeadsOrder(nil, "newest", now, 0); err == nil {
		t.Error("an unknown sort policy was accepted")
	}
}

// An export imported into an empty tracker is the same tracker, and
// importing it again appends nothing.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	a := w.add("parser", 1, t0, "backend")
	b := w.add("ship", 2, t0.Add(time.Second))
	w.apply("ada", t0, eventlog.Draft{Type: TypeDepAdded, Subject: b, Data: DepData{Blocker: a}},
		eventlog.Draft{Type: TypeCommented, Subject: a, Data: CommentData{Text: "started"}},
		eventlog.Draft{Type: TypeBlocked, Subject: b, Data: BlockedData{TaskID: b, Reason: "human"}})
	d, err := SetStatus(w.s, p, a, StatusInProgress, "agent", "agent", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("agent", t0, d...)

	recs := w.s.Export()
	var buf bytes.Buffer
	for _, r := range recs {
		line, _ := json.Marshal(r)
		buf.Write(append(line, '\n'))
	}
	parsed, rep, err := ParseJSONL(&buf)
	if err != nil || len(rep.Dropped)+rep.Tombstones+len(rep.AsOpen) > 0 {
		t.Fatal(err, rep)
	}
	v := newWorld(t)
	drafts, err := ImportTasks(v.s, parsed)
	if err != nil || len(drafts) != 2 {
		t.Fatalf("%d drafts, %v", len(drafts), err)
	}
	v.apply("importer", t0.Add(time.Hour), drafts...)
	want, _ := json.Marshal(recs)
	got, _ := json.Marshal(v.s.Export())
	if !bytes.Equal(got, want) {
		t.Fatalf("round trip differs:\n%s\n%s", want, got)
	}
	v.s = viaSnapshot(t, v.s)
	if got, _ := json.Marshal(v.s.Export()); !bytes.Equal(got, want) {
		t.Fatalf("round trip through the snapshot differs:\n%s\n%s", want, got)
	}
	if again, err := ImportTasks(v.s, parsed); err != nil || len(again) != 0 {
		t.Fatalf("a second import made %d events (%v)", len(again), err)
	}
	if st := Beads(v.s.View(v.s.trk.m[b], p, t0)).Status; st != StatusBlocked {
		t.Fatalf("blocked came back as %s", st)
	}
}

// viaSnapshot is s written to its snapshots and read back.
func viaSnapshot(t testing.TB, s *State) *State {
	t.Helper()
	back := NewState()
	for _, pair := range []struct{ from, to projections.Projection }{
		{NewTasksProjection(s), NewTasksProjection(back)},
		{NewQueueProjection(s), NewQueueProjection(back)},
	} {
		snap, err := pair.from.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if err := pair.to.UnmarshalState(bytes.Clone(snap)); err != nil {
			t.Fatal(err)
		}
		switch p := pair.to.(type) {
		case *TasksProjection:
			p.State()
		case *QueueProjection:
			p.State()
		}
	}
	return back
}

// ParseJSONL refuses a bad line whole, naming it.
func TestParseJSONLRefuses(t *testing.T) {
	t.Parallel()
	ok := `{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z"}`
	for _, tc := range []struct{ in, msg string }{
		{ok + "\n[1]", "line 2: not a JSON object"},
		{`{"id":"x 1","title":"t","created_at":"2026-01-01T00:00:00Z"}`, `id "x 1" is not an id`},
		{`{"id":"x-1","title":" ","created_at":"2026-01-01T00:00:00Z"}`, "x-1 has no title"},
		{`{"id":"x-1","title":"t"}`, "x-1 has no created_at"},
		{`{"id":"x-1","title":"t","priority":9,"created_at":"2026-01-01T00:00:00Z"}`, "priority must be 0 to 4"},
		{`{"id":"x-1","title":"t","labels":["a b"],"created_at":"2026-01-01T00:00:00Z"}`, "must be non-empty, without whitespace"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","dependencies":[{"depends_on_id":"x-1","type":"blocks"}]}`, `dependency on "x-1"`},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","dependencies":[{"issue_id":"x-2","depends_on_id":"x-3","type":"blocks"}]}`, "a dependency of x-2"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","dependencies":[{"depends_on_id":"x-2","type":"parent-child"},{"depends_on_id":"x-3","type":"parent-child"}]}`, "x-1 has 2 parents"},
		{ok + "\n" + ok, "line 2: x-1 is on line 1 already"},
		{`{"id":"x-1","title":"t","created_at":"yesterday"}`, "line 1:"},
		{`{"id":"x-1","title":"t","created_at":"1600-01-01T00:00:00Z"}`, "x-1: created_at 1600-01-01T00:00:00Z is out of range (1678-2262)"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","updated_at":"2300-01-01T00:00:00Z"}`, "updated_at 2300-01-01T00:00:00Z is out of range"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","closed_at":"0001-01-01T00:00:01Z"}`, "closed_at 0001-01-01T00:00:01Z is out of range"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","dependencies":[{"depends_on_id":"x-2","type":"blocks","created_at":"9999-01-01T00:00:00Z"}]}`, "dependency on x-2 9999-01-01T00:00:00Z is out of range"},
		{`{"id":"x-1","title":"t","created_at":"2026-01-01T00:00:00Z","comments":[{"id":4,"text":"hi","created_at":"1000-01-01T00:00:00Z"}]}`, "comment 4 1000-01-01T00:00:00Z is out of range"},
		{`{"id":"x-1","title":"t","status":"frozen","created_at":"2026-01-01T00:00:00Z"}`, `status "frozen" is not one of open, in_progress, blocked, deferred, closed`},
	} {
		_, _, err := ParseJSONL(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.msg) || fault.Classify(err).Code != CodeInvalidImport.Name {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.msg)
		}
	}
}

// bd's export holds the issues it deleted (tombstones): they are skipped
// and counted, their fields not reported as dropped. bd's pinned and hooked
// are read as open, and named.
func TestParseJSONLTombstonesAndStatuses(t *testing.T) {
	t.Parallel()
	in := `{"id":"bd-1","title":"kept","status":"open","created_at":"2026-01-01T00:00:00Z"}
{"id":"bd-2","title":"gone","status":"tombstone","created_at":"2026-01-01T00:00:00Z","deleted_at":"2026-01-02T00:00:00Z","original_type":"task"}
{"id":"bd-2","title":"gone again","status":"tombstone","created_at":"1000-01-01T00:00:00Z"}
{"id":"bd-3","title":"pinned","status":"pinned","created_at":"2026-01-01T00:00:00Z"}
{"id":"bd-4","title":"hooked","status":"hooked","assignee":"agent","created_at":"2026-01-01T00:00:00Z"}
`
	recs, rep, err := ParseJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ID+" "+r.Status)
	}
	if want := []string{"bd-1 open", "bd-3 open", "bd-4 open"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if rep.Tombstones != 2 || len(rep.Dropped) != 0 || !slices.Equal(rep.AsOpen, []string{"bd-3 (pinned)", "bd-4 (hooked)"}) {
		t.Fatalf("report %+v", rep)
	}
}

// A prefix that would make two ids one is refused, naming both.
func TestRenamePrefixCollision(t *testing.T) {
	t.Parallel()
	recs := []TaskJSON{{ID: "a-x1"}, {ID: "b-x2"}, {ID: "b-x1"}}
	err := RenamePrefix(recs, "sp")
	if err == nil || fault.Classify(err).Code != CodeInvalidImport.Name ||
		err.Error() != "--prefix sp would make a-x1 and b-x1 the same id, sp-x1" {
		t.Fatalf("%v", err)
	}
	if err := RenamePrefix([]TaskJSON{{ID: "a-x1"}, {ID: "a-x2"}}, "sp"); err != nil {
		t.Fatal(err)
	}
}

// ExportEach streams what Export returns, renamed as RenamePrefix renames
// it: in memory, from a table read by nothing else first, and from one with
// a task changed and one added since; with ids of one prefix (renamed as
// they stream) and of several (whose new ids sort otherwise: the whole
// path), for no prefix, others, and one that makes two ids one.
func TestExportEachAsExport(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"one prefix", "several", "colliding"} {
		mixed := kind != "one prefix"
		w := newWorld(t)
		a := w.add("parser", 1, t0, "backend")
		b := w.add("ship", 2, t0.Add(time.Second))
		w.apply("ada", t0, eventlog.Draft{Type: TypeDepAdded, Subject: b, Data: DepData{Blocker: a}},
			eventlog.Draft{Type: TypeCommented, Subject: a, Data: CommentData{Text: "started"}})
		prefixes := []string{"", "bd", "zz"}
		if mixed {
			aa := "aa-001" // first, and after the others once renamed
			if kind == "colliding" {
				aa = "aa-" + strings.TrimPrefix(b, "sp-") // aa-X and sp-X: one id under any prefix
			}
			drafts, err := ImportTasks(w.s, []TaskJSON{
				{ID: "bd-zz9", Title: "from bd", Status: StatusOpen, IssueType: "task", CreatedAt: t0, UpdatedAt: t0,
					Dependencies: []DepJSON{{IssueID: "bd-zz9", DependsOnID: a, Type: "blocks", CreatedAt: t0}}},
				{ID: aa, Title: "from aa", Status: StatusOpen, IssueType: "task", CreatedAt: t0, UpdatedAt: t0},
			})
			if err != nil {
				t.Fatal(err)
			}
			w.apply("importer", t0, drafts...)
		}
		saved := viaSnapshot(t, w.s)
		changed := func() *State { // the table, with a task changed and one added since
			s := viaSnapshot(t, w.s)
			for _, d := range []eventlog.Draft{{Type: TypeCommented, Subject: b, Data: CommentData{Text: "later"}}} {
				data, _ := json.Marshal(d.Data)
				s.Apply(&eventlog.Event{V: 1, ID: "x1", Writer: "w", Seq: 99, LC: 99, At: t0, Actor: "ada", Type: d.Type, Subject: d.Subject, Data: data})
			}
			d, _, err := AddTask(s, NewTask{Title: "new", Priority: 2}, "sp", "writer1", t0)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := json.Marshal(d.Data)
			s.Apply(&eventlog.Event{V: 1, ID: "x2", Writer: "w", Seq: 100, LC: 100, At: t0, Actor: "ada", Type: d.Type, Subject: d.Subject, Data: data})
			return s
		}
		for name, fresh := range map[string]func() *State{
			"memory":  func() *State { return w.s },
			"table":   func() *State { return viaSnapshot(t, saved) },
			"changed": changed,
		} {
			for _, to := range prefixes {
				want := fresh().Export()
				wantErr := error(nil)
				if to != "" {
					wantErr = RenamePrefix(want, to)
				}
				var got []string
				err := fresh().ExportEach(to, func(r TaskJSON) error {
					line, err := json.Marshal(r)
					got = append(got, string(line))
					return err
				})
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("%s, %s, %q: %v, want %v", kind, name, to, err, wantErr)
				}
				if err != nil {
					continue
				}
				var wantLines []string
				for _, r := range want {
					line, _ := json.Marshal(r)
					wantLines = append(wantLines, string(line))
				}
				if !slices.Equal(got, wantLines) {
					t.Fatalf("%s, %s, %q:\n%s\nwant\n%s", kind, name, to, strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
				}
			}
		}
	}
}

// FuzzParseJSONL: any input is refused with invalid_import or parsed into
// tasks that import, export and parse again to the same tasks.
func FuzzParseJSONL(f *testing.F) {
	f.Add([]byte(`{"id":"x-1","title":"t","status":"blocked","labels":["a"],"created_at":"2026-01-01T00:00:00Z","comments":[{"id":3,"author":"a","text":"hi","created_at":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"id":"x-2","title":"t","created_at":"2026-01-01T00:00:00Z","dependencies":[{"depends_on_id":"x-1","type":"related","created_at":"2026-01-01T00:00:00Z"}]}` + "\n\n"))
	f.Add([]byte("{}"))
	f.Add([]byte(`{"id":"x-3","title":"t","status":"tombstone"}` + "\n" + `{"id":"x-4","title":"t","status":"hooked","owner":"o","created_by":"c","created_at":"2262-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, _, err := ParseJSONL(bytes.NewReader(in))
		if err != nil {
			if fault.Classify(err).Code != CodeInvalidImport.Name {
				t.Fatalf("error %v is not invalid_import", err)
			}
			return
		}
		s := NewState()
		drafts, err := ImportTasks(s, recs)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range drafts {
			data, _ := json.Marshal(d.Data)
			s.Apply(&eventlog.Event{Type: d.Type, Subject: d.Subject, At: t0, Data: data})
		}
		first, _ := json.Marshal(s.Export())
		s = viaSnapshot(t, s)
		if again, _ := json.Marshal(s.Export()); !bytes.Equal(again, first) {
			t.Fatalf("the snapshot changed the tasks:\n%s\n%s", first, again)
		}
		var buf bytes.Buffer
		for _, r := range s.Export() {
			line, _ := json.Marshal(r)
			buf.Write(append(line, '\n'))
		}
		again, _, err := ParseJSONL(&buf)
		if err != nil {
			t.Fatalf("an export does not parse: %v\n%s", err, buf.Bytes())
		}
		if more, err := ImportTasks(s, again); err != nil || len(more) != 0 {
			t.Fatalf("re-importing an export made %d events (%v)\n%s", len(more), err, first)
		}
	})
}
