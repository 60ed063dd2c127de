package orchestrator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/plans"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func ev(typ, subject string, at time.Time, data any) *eventlog.Event {
	b, _ := json.Marshal(data)
	return &eventlog.Event{Type: typ, Subject: subject, At: at, Data: b}
}

func policy() Policy {
	return Policy{Agent: []string{"agent"}, Watchdog: 5 * time.Minute, Stall: 5 * time.Minute, Grace: time.Second, OutputRecord: time.Minute,
		QuickExits: 3, SameErrors: 3}
}

func TestFoldPhases(t *testing.T) {
	s := NewState()
	s.Apply(ev(TypeClaimed, "sp-1", t0, ClaimedData{Attempt: 2, Branch: "spool/sp-1", Worktree: "/w", RunDir: "/r", FailureContext: "boom"}))
	a := s.ActiveTask
	if a == nil || a.Phase != PhaseStarting || a.Attempt != 2 || a.FailureContext != "boom" {
		t.Fatalf("after claim: %+v", a)
	}
	// A second claim while one is active is skipped: one agent at a time.
	s.Apply(ev(TypeClaimed, "sp-2", t0, ClaimedData{Attempt: 1}))
	if s.ActiveTask.TaskID != "sp-1" {
		t.Fatalf("second claim replaced the active task: %+v", s.ActiveTask)
	}
	// A base that is not a commit id (a revert hands it to git) is skipped.
	s.Apply(ev(TypeAgentStarted, "sp-1", t0.Add(time.Second), StartedData{Attempt: 2, Process: Process{PID: 42, PGID: 42}, Base: "-d"}))
	if a.Phase != PhaseStarting {
		t.Fatalf("a start with base -d was folded: %+v", a)
	}
	base := strings.Repeat("ab", 20)
	s.Apply(ev(TypeAgentStarted, "sp-1", t0.Add(time.Second), StartedData{Attempt: 2, Process: Process{PID: 42, PGID: 42}, Base: base}))
	if a.Phase != PhaseRunning || a.AgentPID != 42 || a.Base != base || !a.LastOutputAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("after start: %+v", a)
	}
	s.Apply(ev(TypeAgentOutput, "sp-1", t0.Add(2*time.Minute), OutputData{At: t0.Add(90 * time.Second)}))
	if !a.LastOutputAt.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("output not recorded: %v", a.LastOutputAt)
	}
	s.Apply(ev(TypeAgentExited, "sp-2", t0, ExitedData{ExitCode: 0})) // another task: skipped
	if a.Phase != PhaseRunning {
		t.Fatalf("an exit of another task moved the phase: %s", a.Phase)
	}
	s.Apply(ev(TypeStopping, "sp-1", t0.Add(3*time.Minute), StoppingData{Reason: ReasonStalled}))
	s.Apply(ev(TypeAgentExited, "sp-1", t0.Add(4*time.Minute), ExitedData{Attempt: 2, ExitCode: -1, Signal: "terminated", Reason: ReasonStalled}))
	if a.Phase != PhaseFinishing || a.Exit == nil || a.StopReason != ReasonStalled {
		t.Fatalf("after exit: %+v", a)
	}
	s.Apply(ev(TypeFinished, "sp-1", t0.Add(5*time.Minute), FinishedData{Attempt: 2, Outcome: OutcomeFailed}))
	if s.ActiveTask != nil || s.Attempts != 1 {
		t.Fatalf("after finish: %+v", s)
	}
	s.Apply(ev(TypeWatchdogRan, Worker, t0.Add(6*time.Minute), struct{}{}))
	if s.LastWatchdogRun == nil || !s.LastWatchdogRun.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("watchdog: %v", s.LastWatchdogRun)
	}
	s.Apply(ev(plans.TypeFeedbackAdded, "feedback/fb-1", t0, plans.FeedbackData{ID: "fb-1", Text: "slow"}))
	s.Apply(ev(plans.TypeFeedbackAdded, "feedback/fb-1", t0, plans.FeedbackData{ID: "fb-1", Text: "slow"}))
	s.Apply(ev(plans.TypeFeedbackAdded, "feedback/fb-2", t0, plans.FeedbackData{ID: "fb-2", Text: "ugly"}))
	s.Apply(ev(plans.TypeFeedbackCategorized, "feedback/fb-1", t0, plans.CategorizedData{ID: "fb-1", Category: "bug"}))
	if len(s.PendingFeedback) != 1 || s.PendingFeedback[0].ID != "fb-2" {
		t.Fatalf("feedback: %+v", s.PendingFeedback)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	p := &Projection{s: NewState()}
	p.Apply(ev(TypeClaimed, "sp-1", t0, ClaimedData{Attempt: 1, Branch: "spool/sp-1"}))
	b, err := p.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	q := &Projection{}
	if err := q.UnmarshalState(b); err != nil {
		t.Fatal(err)
	}
	c, _ := q.MarshalState()
	if string(b) != string(c) {
		t.Fatalf("round trip:\n%s\n%s", b, c)
	}
	files, _ := q.Files()
	var m map[string]any
	if err := json.Unmarshal(files[0].Data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"active_task", "last_watchdog_run", "pending_feedback_categorizations"} {
		if _, ok := m[k]; !ok {
			t.Errorf("orchestrator-state.json lacks %s: %s", k, files[0].Data)
		}
	}
	at := m["active_task"].(map[string]any)
	for _, k := range []string{"task_id", "phase", "agent_pid", "branch", "started_at", "last_output_at", "attempt"} {
		if _, ok := at[k]; !ok {
			t.Errorf("active_task lacks %s", k)
		}
	}
}

func TestMonitor(t *testing.T) {
	p := policy()
	exit0 := &ExitRecord{ExitCode: 0}
	exit1 := &ExitRecord{ExitCode: 1}
	running := func(last time.Time) *Active {
		return &Active{TaskID: "sp-1", Phase: PhaseRunning, Attempt: 1, LastOutputAt: last, Process: Process{PID: 1}}
	}
	sup := &Process{PID: 9}
	tests := []struct {
		name   string
		a      *Active
		o      Observation
		now    time.Time
		kind   StepKind
		typ    string
		reason string
	}{
		{"starting, supervisor recorded", &Active{TaskID: "sp-1", Phase: PhaseStarting}, Observation{Supervisor: sup, Alive: true}, t0, StepRecord, TypeAgentStarted, ""},
		{"starting, nothing started", &Active{TaskID: "sp-1", Phase: PhaseStarting}, Observation{}, t0, StepRecord, TypeAgentExited, ReasonNotStart},
		{"running, quiet but within the stall timeout", running(t0), Observation{Alive: true}, t0.Add(4 * time.Minute), StepNone, "", ""},
		{"running, stalled", running(t0), Observation{Alive: true}, t0.Add(5 * time.Minute), StepStop, TypeStopping, ReasonStalled},
		{"running, the log grew recently", running(t0), Observation{Alive: true, LastOutput: t0.Add(4 * time.Minute)}, t0.Add(6 * time.Minute), StepRecord, TypeAgentOutput, ""},
		{"running, output within the minute is not recorded", running(t0), Observation{Alive: true, LastOutput: t0.Add(10 * time.Second)}, t0.Add(30 * time.Second), StepNone, "", ""},
		{"running, exited 0", running(t0), Observation{Exit: exit0}, t0, StepRecord, TypeAgentExited, ""},
		{"running, exited 1", running(t0), Observation{Exit: exit1}, t0, StepRecord, TypeAgentExited, ""},
		{"running, supervisor gone unrecorded", running(t0), Observation{}, t0, StepRecord, TypeAgentExited, ReasonLost},
		{"stopping, still alive", &Active{TaskID: "sp-1", Phase: PhaseStopping, StopReason: ReasonStalled}, Observation{Alive: true}, t0, StepSignal, "", ""},
		{"stopping, ended", &Active{TaskID: "sp-1", Phase: PhaseStopping, StopReason: ReasonStalled}, Observation{Exit: &ExitRecord{ExitCode: -1, Signal: "terminated"}}, t0, StepRecord, TypeAgentExited, ReasonStalled},
		{"stopping, killed", &Active{TaskID: "sp-1", Phase: PhaseStopping, StopReason: ReasonStopped}, Observation{}, t0, StepRecord, TypeAgentExited, ReasonStopped},
		{"finishing", &Active{TaskID: "sp-1", Phase: PhaseFinishing, Exit: &ExitedData{}}, Observation{}, t0, StepSettle, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Monitor(tt.a, tt.o, p, tt.now)
			if st.Kind != tt.kind || st.Draft.Type != tt.typ {
				t.Fatalf("got kind %d type %q, want %d %q", st.Kind, st.Draft.Type, tt.kind, tt.typ)
			}
			var reason string
			switch d := st.Draft.Data.(type) {
			case ExitedData:
				reason = d.Reason
			case StoppingData:
				reason = d.Reason
			}
			if reason != tt.reason {
				t.Fatalf("reason %q, want %q", reason, tt.reason)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		x    ExitedData
		want string
	}{
		{ExitedData{ExitCode: 0}, OutcomeDone},
		{ExitedData{ExitCode: 0, Reason: ReasonStalled}, OutcomeDone},
		{ExitedData{ExitCode: 2}, OutcomeFailed},
		{ExitedData{ExitCode: -1, Signal: "killed"}, OutcomeFailed},
		{ExitedData{ExitCode: -1, Signal: "terminated", Reason: ReasonStalled}, OutcomeFailed},
		{ExitedData{ExitCode: -1, Reason: ReasonStopped}, OutcomeReleased},
		{ExitedData{ExitCode: -1, Reason: ReasonLost}, OutcomeReleased},
		{ExitedData{ExitCode: -1, Reason: ReasonNotStart}, OutcomeReleased},
		// Not the task's: released, not counted.
		{ExitedData{ExitCode: 127}, OutcomeReleased},
		{ExitedData{ExitCode: -1, Reason: ReasonNoLaunch}, OutcomeReleased},
		{ExitedData{ExitCode: 1, RanMS: 40, Untouched: true}, OutcomeReleased},
		// A quick exit that changed something, or a slow one, is the task's.
		{ExitedData{ExitCode: 1, RanMS: 40}, OutcomeFailed},
		{ExitedData{ExitCode: 1, RanMS: 1500, Untouched: true}, OutcomeFailed},
		{ExitedData{ExitCode: 1, Untouched: true}, OutcomeFailed}, // no time: an older supervisor's record
		// 127 after working a while: its last step's tool was missing, the
		// run is the task's like any other.
		{ExitedData{ExitCode: 127, RanMS: 40 * 60 * 1000}, OutcomeFailed},
		{ExitedData{ExitCode: 126, RanMS: 1500, Untouched: true}, OutcomeFailed},
	}
	for _, tt := range tests {
		if got := Outcome(tt.x, policy()); got != tt.want {
			t.Errorf("Outcome(%+v) = %s, want %s", tt.x, got, tt.want)
		}
	}
}

func TestWatchdogDue(t *testing.T) {
	p := policy()
	s := NewState()
	if !WatchdogDue(s, p, t0) {
		t.Fatal("never ran: due")
	}
	at := t0
	s.LastWatchdogRun = &at
	if WatchdogDue(s, p, t0.Add(4*time.Minute)) || !WatchdogDue(s, p, t0.Add(5*time.Minute)) {
		t.Fatal("interval not honoured")
	}
}

// A claim whose task id is not one path element is skipped: the run
// directory, worktree and branch are derived from the id, and a pushed
// event must not point them outside .spool/runs and .git/spool/worktrees.
func TestFoldSkipsAClaimOfAnUnsafeID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../../etc", "a/b", `a\b`, "a\x00b", ".hidden", "-rf", "--upload-pack=x", strings.Repeat("a", 129)} {
		s := NewState()
		s.Apply(ev(TypeClaimed, id, t0, ClaimedData{Attempt: 1}))
		if s.ActiveTask != nil {
			t.Errorf("a claim of %q was folded: %+v", id, s.ActiveTask)
		}
	}
	s := NewState()
	s.Apply(ev(TypeClaimed, "bd-a1.2", t0, ClaimedData{Attempt: 1}))
	if s.ActiveTask == nil {
		t.Error("a claim of an ordinary id (bd's dotted child) was skipped")
	}
}

// The breaker, run by run: which run trips it, how, and that the streaks
// it reads are the fold's (a success, or a resume, ends them).
func TestBreaker(t *testing.T) {
	quick := ExitedData{ExitCode: 2, RanMS: 30, Untouched: true, Tail: "sh: cannot open agent.sh"}
	notFound := ExitedData{ExitCode: 127, Tail: "spool: could not start the agent: not found"}
	fail := func(task string) ExitedData {
		return ExitedData{ExitCode: 1, RanMS: 5000, Tail: "agent: " + task + " attempt 3\nerror: 401 unauthorized"}
	}
	ok := ExitedData{ExitCode: 0, RanMS: 5000}
	type run struct {
		task string
		x    ExitedData
	}
	for _, c := range []struct {
		name string
		runs []run
		trip int    // the run (1-based) that trips it; 0: none
		kind string // its kind
	}{
		{"cannot start trips at once", []run{{"sp-a", notFound}}, 1, BreakCannotStart},
		{"three quick exits in a row", []run{{"sp-a", quick}, {"sp-a", quick}, {"sp-b", quick}}, 3, BreakQuickExit},
		{"a success ends the quick streak", []run{{"sp-a", quick}, {"sp-a", quick}, {"sp-b", ok}, {"sp-a", quick}, {"sp-a", quick}}, 0, ""},
		{"a real failure ends the quick streak", []run{{"sp-a", quick}, {"sp-a", quick}, {"sp-b", fail("sp-b")}, {"sp-a", quick}}, 0, ""},
		{"the same error on three tasks", []run{{"sp-a", fail("sp-a")}, {"sp-a", fail("sp-a")}, {"sp-b", fail("sp-b")}, {"sp-c", fail("sp-c")}}, 4, BreakSameError},
		{"one task failing alike is its own", []run{{"sp-a", fail("sp-a")}, {"sp-a", fail("sp-a")}, {"sp-a", fail("sp-a")}, {"sp-a", fail("sp-a")}}, 0, ""},
		{"another error breaks the run", []run{{"sp-a", fail("sp-a")}, {"sp-b", fail("sp-b")},
			{"sp-c", ExitedData{ExitCode: 1, RanMS: 5000, Tail: "tests failed"}}, {"sp-d", fail("sp-d")}}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, p := NewState(), policy()
			for i, r := range c.runs {
				a := &Active{TaskID: r.task, Attempt: i + 1}
				outcome := Outcome(r.x, p)
				fin := FinishedData{Breaker: Classify(r.x, p)}
				if outcome == OutcomeFailed {
					fin.Signature = Signature(r.x, r.task)
				}
				got := Trip(s, a, r.x, outcome, fin.Signature, p)
				if (got != nil) != (i+1 == c.trip) {
					t.Fatalf("run %d: trip %+v, want a trip at run %d", i+1, got, c.trip)
				}
				if got != nil {
					if got.Kind != c.kind || !strings.Contains(got.Reason, "spool orchestrator resume") || !slices.Contains(got.Tasks, r.task) {
						t.Fatalf("trip %+v, want kind %s with what to do", got, c.kind)
					}
					s.Apply(ev(TypeClaimed, r.task, t0, ClaimedData{Attempt: i + 1}))
					s.Apply(ev(TypeFinished, r.task, t0, FinishedData{Attempt: i + 1, Outcome: OutcomeReleased}))
					s.Apply(ev(TypePaused, Worker, t0, *got))
					if s.Paused == nil || s.Paused.Kind != c.kind {
						t.Fatalf("paused: %+v", s.Paused)
					}
					d, err := Resume(s, "by hand")
					if err != nil {
						t.Fatal(err)
					}
					s.Apply(ev(d.Type, d.Subject, t0, d.Data))
					if s.Paused != nil || s.Breaker.QuickExits != 0 || s.Breaker.SameError != nil {
						t.Fatalf("after resume: %+v", s)
					}
					if _, err := Resume(s, "again"); err == nil {
						t.Fatal("resuming an orchestrator that is not paused")
					}
					return
				}
				s.Apply(ev(TypeClaimed, r.task, t0, ClaimedData{Attempt: i + 1}))
				fin.Attempt, fin.Outcome = i+1, outcome
				s.Apply(ev(TypeFinished, r.task, t0, fin))
			}
		})
	}
}
