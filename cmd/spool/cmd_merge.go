package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	"github.com/spoolhq/spool/internal/store"
)

// MergeCmd is the merge queue.
type MergeCmd struct {
	Submit   MergeSubmitCmd   `cmd:"" help:"Queue this worktree's branch for the merge train (idempotent)."`
	List     MergeListCmd     `cmd:"" help:"List active entries, the queue in position order first."`
	Show     MergeShowCmd     `cmd:"" help:"Show one entry with its audit trail."`
	Position MergePositionCmd `cmd:"" help:"Print an entry's position among pending entries."`
	Cancel   MergeCancelCmd   `cmd:"" help:"Cancel an entry."`
	Retry    MergeRetryCmd    `cmd:"" help:"Put a failed_retryable entry back in the queue."`
	Freeze   MergeFreezeCmd   `cmd:"" help:"Stop the train claiming entries; submissions continue."`
	Unfreeze MergeUnfreezeCmd `cmd:"" help:"Let the train claim entries again."`
	Run      MergeRunCmd      `cmd:"" help:"Run the merge train: rebase, test and merge entries in order."`
}

// mergeCtx opens the store and reads clock and actor once for a merge command.
func (e *env) mergeCtx() (*store.Store, time.Time, string, error) {
	st, err := e.open()
	if err != nil {
		return nil, time.Time{}, "", err
	}
	now, err := e.now()
	if err != nil {
		return nil, now, "", err
	}
	actor, err := e.actor(e.ctx, st.Repo)
	return st, now, actor, err
}

// mergeEntry opens the queue (recovering expired entries first) and finds
// the entry a command names (see mergequeue.State.Lookup).
func (e *env) mergeEntry(handle string) (*store.Store, *mergequeue.State, *mergequeue.Entry, error) {
	st, now, actor, err := e.mergeCtx()
	if err != nil {
		return nil, nil, nil, err
	}
	q, err := mqservice.Queue(e.ctx, st, actor, now)
	if err != nil {
		return nil, nil, nil, err
	}
	en, err := q.Lookup(handle)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, q, en, nil
}

type MergeSubmitCmd struct {
	Workspace  string `placeholder:"NAME" help:"Worktree to submit, by directory name or path (default: the current one)."`
	Priority   *int   `placeholder:"N" help:"0 (most urgent) to 4; default 2 for a new entry, unchanged for one already queued."`
	Bead       string `placeholder:"ID" help:"Bead or task id, for traceability."`
	NoPush     bool   `help:"Do not push the branch to merge.remote first."`
	AutoCommit bool   `help:"Commit uncommitted changes instead of refusing."`
}

func (c *MergeSubmitCmd) Run(e *env) error {
	if p := c.Priority; p != nil && (*p < mergequeue.MinPriority || *p > mergequeue.MaxPriority) {
		return mergequeue.InvalidPriority(*p)
	}
	opt := mqservice.SubmitOptions{Workspace: c.Workspace, Priority: c.Priority, BeadID: c.Bead, NoPush: c.NoPush, AutoCommit: c.AutoCommit}
	if c.Workspace == "" {
		opt.Prefetched = mqservice.Prefetch(e.ctx, e.dir()) // git reads the worktree while the store opens
	}
	st, now, actor, err := e.mergeCtx()
	if err != nil {
		return err
	}
	resp, err := mqservice.Submit(e.ctx, st, opt, actor, now)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, resp)
	}
	pos := "no position (" + string(resp.Status) + ")"
	if resp.Position != nil {
		pos = fmt.Sprintf("position %d of %d", *resp.Position, resp.PendingCount)
	}
	fmt.Fprintf(e.stdout, "entry %d %s: %s %s at %s, %s (ref %s)\n", resp.EntryID, resp.SubmissionType, text(resp.Workspace), text(resp.Branch),
		short(resp.HeadSHA), pos, mergequeue.ShortRef(resp.EntryRef))
	if resp.PushNote != "" {
		fmt.Fprintln(e.stdout, text(resp.PushNote))
	}
	return nil
}

type MergeListCmd struct {
	All bool `help:"Include merged, failed_terminal and cancelled entries."`
}

// listRow is an entry without its audit trail.
type listRow struct {
	EntryID        int64             `json:"entry_id"`
	EntryRef       string            `json:"entry_ref"`
	Position       *int              `json:"position"`
	Status         mergequeue.Status `json:"status"`
	Priority       int               `json:"priority"`
	Workspace      string            `json:"workspace"`
	WorkspaceID    string            `json:"workspace_id"`
	Branch         string            `json:"branch"`
	HeadSHA        string            `json:"head_sha"`
	DedupeKey      string            `json:"dedupe_key"`
	Owner          string            `json:"owner"`
	Attempts       int               `json:"attempts"`
	BeadID         string            `json:"bead_id,omitempty"`
	AddedAt        time.Time         `json:"added_at"`
	LastError      string            `json:"last_error,omitempty"`
	Waiting        string            `json:"waiting,omitempty"`
	WorkspaceState string            `json:"workspace_state"`
	Conflict       string            `json:"conflict,omitempty"` // the latest conflict between clones the fold resolved
}

// note is what merge list says about an entry: why it waits, else the
// latest conflict between clones the fold resolved on it.
func (r listRow) note() string {
	if r.Waiting != "" {
		return "waiting: " + r.Waiting
	}
	return r.Conflict
}

// rowOf is the row of an entry; mergequeue.Entry.AppendRow writes the same JSON.
func rowOf(en *mergequeue.Entry) listRow {
	r := listRow{EntryID: en.ID, EntryRef: en.Ref, Status: en.Status, Priority: en.Priority, Workspace: en.Workspace, WorkspaceID: en.WorkspaceID,
		Branch: en.Branch, HeadSHA: en.HeadSHA, DedupeKey: en.DedupeKey, Owner: en.Owner, Attempts: en.Attempts, BeadID: en.BeadID,
		AddedAt: en.AddedAt, LastError: en.LastError, Waiting: en.Waiting, WorkspaceState: string(en.WorkspaceState), Conflict: en.Conflict()}
	if en.Position > 0 {
		p := en.Position
		r.Position = &p
	}
	return r
}

func (c *MergeListCmd) Run(e *env) error {
	st, now, actor, err := e.mergeCtx()
	if err != nil {
		return err
	}
	q, err := mqservice.Queue(e.ctx, st, actor, now)
	if err != nil {
		return err
	}
	var entries []*mergequeue.Entry
	entries = append(entries, q.Queue()...)
	for _, en := range q.Entries {
		if en.Status != mergequeue.Pending && (c.All || en.Status.Active()) {
			entries = append(entries, en)
		}
	}
	if e.JSON {
		return writeRows(e.stdout, map[string]any{"frozen": q.Frozen, "frozen_reason": q.FrozenReason,
			"pending_count": q.PendingCount}, entries)
	}
	rows := make([]listRow, 0, len(entries))
	for _, en := range entries {
		rows = append(rows, rowOf(en))
	}
	if q.Frozen {
		fmt.Fprintf(e.stdout, "frozen by %s: %s\n", q.FrozenBy, q.FrozenReason)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "the merge queue is empty")
		return nil
	}
	notes := false // a NOTE column only when an entry has something to say
	for _, r := range rows {
		notes = notes || r.note() != ""
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	header := "POS\tID\tREF\tSTATUS\tPRIO\tWORKSPACE\tBRANCH\tHEAD\tOWNER"
	if notes {
		header += "\tNOTE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		pos := "-"
		if r.Position != nil {
			pos = fmt.Sprint(*r.Position)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s", pos, r.EntryID, mergequeue.ShortRef(r.EntryRef), r.Status, r.Priority,
			r.Workspace, r.Branch, short(r.HeadSHA), r.Owner)
		if notes {
			fmt.Fprintf(tw, "\t%s", r.note())
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

type MergeShowCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergeShowCmd) Run(e *env) error {
	st, q, en, err := e.mergeEntry(c.ID)
	if err != nil {
		return err
	}
	trail, err := mqservice.Trail(e.ctx, st, en)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, struct {
			*mergequeue.Entry
			History []mergequeue.AuditStep `json:"history"`
		}{en, trail})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	pos := "-"
	if en.Position > 0 {
		pos = fmt.Sprintf("%d of %d", en.Position, q.PendingCount)
	}
	for _, kv := range [][2]string{
		{"entry", fmt.Sprint(en.ID)}, {"ref", en.Ref}, {"status", string(en.Status)}, {"position", pos},
		{"workspace", en.Workspace + " (" + en.Worktree + ")"}, {"workspace id", en.WorkspaceID}, {"branch", en.Branch}, {"head", en.HeadSHA},
		{"change id", en.ChangeID + " (" + en.ChangeIDSource + ")"}, {"dedupe key", en.DedupeKey},
		{"priority", fmt.Sprint(en.Priority)}, {"owner", en.Owner}, {"attempts", fmt.Sprint(en.Attempts)},
		{"bead", en.BeadID}, {"tested", en.TestedSHA}, {"tested against", en.TestedAgainstSHA},
		{"last error", en.LastError}, {"waiting", en.Waiting}, {"conflicts", strings.Join(en.ConflictPaths, ", ")}, {"run output", en.RunDir},
		{"between clones", en.Conflict()},
	} {
		if kv[1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
		}
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "history:")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, s := range trail {
		move := string(s.To)
		if s.From != "" && s.From != s.To {
			move = string(s.From) + " → " + string(s.To)
		}
		note := s.Reason
		if s.Skipped != "" {
			note = "skipped: " + s.Skipped
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.At.Format(time.RFC3339), s.Type, move, s.Actor, note)
	}
	return tw.Flush()
}

type MergePositionCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergePositionCmd) Run(e *env) error {
	_, q, en, err := e.mergeEntry(c.ID)
	if err != nil {
		return err
	}
	var pos *int
	if en.Position > 0 {
		p := en.Position
		pos = &p
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"entry_id": en.ID, "entry_ref": en.Ref, "status": en.Status, "position": pos, "pending_count": q.PendingCount})
	}
	if pos == nil {
		fmt.Fprintf(e.stdout, "entry %d is %s: no position\n", en.ID, en.Status)
	} else {
		fmt.Fprintf(e.stdout, "entry %d: position %d of %d\n", en.ID, *pos, q.PendingCount)
	}
	return nil
}

type MergeCancelCmd struct {
	ID     string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
	Reason string `help:"Why, for the audit trail."`
}

func (c *MergeCancelCmd) Run(e *env) error {
	return changeEntry(e, c.ID, "cancelled", func(q *mergequeue.State, id int64, pol mergequeue.Policy, actor string) ([]eventlog.Draft, error) {
		return mergequeue.DecideCancel(q, id, actor, c.Reason, pol)
	})
}

type MergeRetryCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergeRetryCmd) Run(e *env) error {
	return changeEntry(e, c.ID, "back in the queue", func(q *mergequeue.State, id int64, pol mergequeue.Policy, actor string) ([]eventlog.Draft, error) {
		return mergequeue.DecideRetry(q, id, actor, pol)
	})
}

// changeEntry finds the entry handle names under the log's lock, where the
// decision is made (a merge may have renumbered entries since the command
// started), and reports it by number and ref.
func changeEntry(e *env, handle, done string, decide func(*mergequeue.State, int64, mergequeue.Policy, string) ([]eventlog.Draft, error)) error {
	st, now, actor, err := e.mergeCtx()
	if err != nil {
		return err
	}
	ref := ""
	_, q, err := mqservice.Change(e.ctx, st, actor, now, func(q *mergequeue.State, pol mergequeue.Policy) ([]eventlog.Draft, error) {
		en, err := q.Lookup(handle)
		if err != nil {
			return nil, err
		}
		ref = en.Ref
		return decide(q, en.ID, pol, actor)
	})
	if err != nil {
		return err
	}
	en := q.EntryByRef(ref)
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"entry_id": en.ID, "entry_ref": en.Ref, "status": en.Status, "position": nullPos(en.Position), "pending_count": q.PendingCount})
	}
	fmt.Fprintf(e.stdout, "entry %d %s (%s), ref %s\n", en.ID, done, en.Status, mergequeue.ShortRef(en.Ref))
	return nil
}

func nullPos(p int) *int {
	if p <= 0 {
		return nil
	}
	return &p
}

type MergeFreezeCmd struct {
	Reason string `help:"Why, shown by merge list."`
}

func (c *MergeFreezeCmd) Run(e *env) error {
	return freeze(e, true, c.Reason)
}

type MergeUnfreezeCmd struct{}

func (c *MergeUnfreezeCmd) Run(e *env) error { return freeze(e, false, "") }

func freeze(e *env, on bool, reason string) error {
	st, now, actor, err := e.mergeCtx()
	if err != nil {
		return err
	}
	events, q, err := mqservice.Change(e.ctx, st, actor, now, func(q *mergequeue.State, _ mergequeue.Policy) ([]eventlog.Draft, error) {
		if on {
			return mergequeue.DecideFreeze(q, reason), nil
		}
		return mergequeue.DecideUnfreeze(q), nil
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"frozen": q.Frozen, "frozen_reason": q.FrozenReason, "changed": len(events) > 0})
	}
	state := "unfrozen"
	if q.Frozen {
		state = "frozen"
	}
	if len(events) == 0 {
		fmt.Fprintf(e.stdout, "the merge queue was already %s\n", state)
	} else {
		fmt.Fprintf(e.stdout, "the merge queue is %s\n", state)
	}
	return nil
}

type MergeRunCmd struct {
	Once   bool   `help:"Process what is pending, then exit (default: keep watching)."`
	Target string `placeholder:"BRANCH" help:"Branch to merge into (default: merge.target)."`
}

func (c *MergeRunCmd) Run(e *env) (err error) {
	if !c.Once {
		longRunning()
	}
	st, _, actor, err := e.mergeCtx()
	if err != nil {
		return err
	}
	st.DeferSave = true // the train saves projections once per entry (Runner.RunOne)
	target := c.Target
	if target == "" {
		target = st.Config.String("merge.target")
	}
	r := &mqservice.Runner{Store: st, Actor: actor, Target: target, ID: mqservice.NewRunnerID(actor),
		Now:     func() time.Time { t, _ := e.now(); return t },
		PauseAt: os.Getenv("SPOOL_TEST_MERGE_PAUSE"), PauseFile: os.Getenv("SPOOL_TEST_MERGE_PAUSE_FILE")}
	if !e.JSON {
		r.Out = e.stdout
	}
	results, err := r.Run(e.ctx, c.Once)
	if err != nil {
		return err
	}
	if results == nil {
		results = []mqservice.Result{}
	}
	if e.JSON {
		if err := writeJSON(e.stdout, map[string]any{"processed": results}); err != nil {
			return err
		}
		return notMerged(c.Once, results)
	}
	defer func() {
		if err == nil {
			err = notMerged(c.Once, results)
		}
	}()
	if len(results) == 0 {
		q, err := mqservice.Queue(e.ctx, st, actor, r.Now())
		if err == nil && q.Frozen {
			fmt.Fprintf(e.stdout, "the merge queue is frozen (%s); nothing claimed\n", q.FrozenReason)
			return nil
		}
		waiting := 0
		for i := 0; err == nil && i < len(q.Entries); i++ {
			if en := q.Entries[i]; en.Status == mergequeue.Pending && en.Waiting != "" {
				fmt.Fprintf(e.stdout, "entry %d waits: %s\n", en.ID, en.Waiting)
				waiting++
			}
		}
		if waiting == 0 {
			fmt.Fprintln(e.stdout, "nothing to merge")
		}
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// writeRows prints head's keys and then "entries", one compact row per line:
// a thousand rows stay readable and cost a fraction of indenting them.
func writeRows(w io.Writer, head map[string]any, entries []*mergequeue.Entry) error {
	buf := bytes.NewBufferString("{")
	for _, k := range sortedKeys(head) {
		v, err := jsonCompact(head[k])
		if err != nil {
			return err
		}
		fmt.Fprintf(buf, "%q: %s, ", k, v)
	}
	buf.WriteString(`"entries": [`)
	b := make([]byte, 0, 512)
	for i, en := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n  ")
		buf.Write(en.AppendRow(b[:0]))
	}
	if len(entries) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]}\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// notMerged is exit 3 for merge run --once when an entry it processed did
// not merge (failed, a rebase conflict, or given back to wait), so CI can
// tell; the output above says what happened to each.
func notMerged(once bool, results []mqservice.Result) error {
	if !once {
		return nil
	}
	var ids []int64
	for _, r := range results {
		if r.Status != mergequeue.Merged {
			ids = append(ids, r.EntryID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fault.New(CodeNotMerged, nil,
		fmt.Sprintf("%d of %d entries processed did not merge: %v", len(ids), len(results), ids), "entry_ids", ids)
}
