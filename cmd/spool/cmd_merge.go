package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
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
	// Every merge command first recovers entries whose runner died, which
	// is a claim.
	OfflineFlag
}

type MergeSubmitCmd struct {
	Workspace  string `placeholder:"NAME" help:"Worktree to submit, by directory name or path (default: the current one)."`
	Priority   *int   `placeholder:"N" help:"0 (most urgent) to 4; default 2 for a new entry, unchanged for one already queued."`
	Bead       string `placeholder:"ID" help:"Bead or task id, for traceability."`
	DedupeKey  string `placeholder:"WS:CHANGE" help:"Dedupe key naming the change, workspace:change_id (default: this worktree's identity and the commit's change id); the same key from another worktree is the same change: refused while its entry is active, a new entry once it has ended."`
	NoPush     bool   `help:"Do not push the branch to merge.remote first."`
	AutoCommit bool   `help:"Commit uncommitted changes instead of refusing."`
}

func (c *MergeSubmitCmd) Run(e *env) error {
	if p := c.Priority; p != nil && (*p < mergequeue.MinPriority || *p > mergequeue.MaxPriority) {
		return mergequeue.InvalidPriority(*p)
	}
	if c.DedupeKey != "" {
		if err := mergequeue.ValidateDedupeKey(c.DedupeKey); err != nil {
			return err
		}
	}
	opt := mqservice.SubmitOptions{Workspace: c.Workspace, Priority: c.Priority, BeadID: c.Bead, DedupeKey: c.DedupeKey, NoPush: c.NoPush, AutoCommit: c.AutoCommit}
	if c.Workspace == "" {
		opt.Prefetched = mqservice.Prefetch(e.ctx, e.dir()) // git reads the worktree while the store opens
	}
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	resp, err := mq.Submit(e.ctx, opt)
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
	All     bool `help:"Include merged, failed_terminal and cancelled entries."`
	Refused bool `help:"List the refused submissions the log records instead (push failed, remote unreachable, worktree not clean, already in queue)."`
}

// note is what merge list says about an entry: why it waits, what to do
// about a failed one, else the latest conflict between clones the fold
// resolved on it.
func note(en *mergequeue.Entry) string {
	if en.Waiting != "" {
		return "waiting: " + en.Waiting
	}
	if next := nextStep(en); next != "" {
		return "next: " + next
	}
	return en.Conflict()
}

// nextStep is what to do about a failed entry: retry it while attempts
// are left, or fix its branch and submit it again, which puts the entry
// back in the queue ("" for an entry that has not failed).
func nextStep(en *mergequeue.Entry) string {
	fix := "fix the branch and run spool merge submit in its worktree"
	if len(en.ConflictPaths) > 0 {
		fix = "rebase the branch onto the target, resolve the conflicts, and run spool merge submit in its worktree"
	}
	switch en.Status {
	case mergequeue.FailedRetryable:
		return fmt.Sprintf("spool merge retry %d, or %s", en.ID, fix)
	case mergequeue.FailedTerminal:
		return fix
	}
	return ""
}

func (c *MergeListCmd) Run(e *env) error {
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	if c.Refused {
		return listRefused(e, mq)
	}
	q, err := mq.Queue(e.ctx)
	if err != nil {
		return err
	}
	o := mq.Order(q)
	entries := q.ListedIn(c.All, o)
	if e.JSON {
		_, err := e.stdout.Write(q.ListJSONIn(entries, o))
		return err
	}
	if q.Frozen {
		fmt.Fprintf(e.stdout, "frozen by %s: %s\n", q.FrozenBy, q.FrozenReason)
	}
	if len(entries) == 0 {
		fmt.Fprintln(e.stdout, "the merge queue is empty")
		return nil
	}
	notes := false // a NOTE column only when an entry has something to say
	for _, en := range entries {
		notes = notes || note(en) != ""
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	header := "POS\tID\tREF\tSTATUS\tPRIO\tWORKSPACE\tBRANCH\tHEAD\tOWNER"
	if notes {
		header += "\tNOTE"
	}
	fmt.Fprintln(tw, header)
	for _, en := range entries {
		pos := "-"
		if en.Position > 0 {
			pos = fmt.Sprint(en.Position)
		}
		prio := fmt.Sprint(en.Priority)
		if st, ok := o.Of(en); ok && st.Aging(en.Priority) != "" {
			prio = st.Aging(en.Priority) // the effective priority and why, e.g. P4→P3 aged 7d
		}
		cells := []string{pos, fmt.Sprint(en.ID), mergequeue.ShortRef(en.Ref), string(en.Status), prio,
			text(en.Workspace), text(en.Branch), short(en.HeadSHA), text(en.Owner)}
		if notes {
			cells = append(cells, text(note(en)))
		}
		fmt.Fprint(tw, row(cells...))
	}
	return tw.Flush()
}

// listRefused is merge list --refused: the submissions refused for a
// reason the log audits (mergequeue.Audited), oldest first.
func listRefused(e *env, mq *mqservice.Service) error {
	refused, err := mq.Refused(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"refused": refused})
	}
	if len(refused) == 0 {
		fmt.Fprintln(e.stdout, "no refused submissions")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tACTOR\tWORKSPACE\tBRANCH\tHEAD\tCODE\tMESSAGE")
	for _, r := range refused {
		fmt.Fprint(tw, row(r.At.Format(time.RFC3339), text(r.Actor), text(r.Workspace), text(r.Branch), short(r.HeadSHA), r.Code, text(r.Message)))
	}
	return tw.Flush()
}

type MergeShowCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergeShowCmd) Run(e *env) error {
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	q, en, err := mq.Entry(e.ctx, c.ID)
	if err != nil {
		return err
	}
	shown, err := mq.Show(e.ctx, q, en)
	if err != nil {
		return err
	}
	en, trail := shown.Entry, shown.History // en at its position, aging counted
	if e.JSON {
		return writeJSON(e.stdout, shown)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	pos := "-"
	if en.Position > 0 {
		pos = fmt.Sprintf("%d of %d", en.Position, q.PendingCount)
	}
	tested := en.TestedSHA
	if tested != "" && untestedIn(trail) {
		tested += " (" + mergequeue.UntestedReason + ")"
	}
	for _, kv := range [][2]string{
		{"entry", fmt.Sprint(en.ID)}, {"ref", en.Ref}, {"status", string(en.Status)}, {"position", pos},
		{"workspace", en.Workspace + " (" + en.Worktree + ")"}, {"workspace id", en.WorkspaceID}, {"branch", en.Branch}, {"head", en.HeadSHA},
		{"change id", en.ChangeID + " (" + en.ChangeIDSource + ")"}, {"dedupe key", en.DedupeKey},
		{"priority", priorityText(shown)}, {"owner", en.Owner}, {"attempts", fmt.Sprint(en.Attempts)},
		{"bead", en.BeadID}, {"tested", tested}, {"tested against", en.TestedAgainstSHA},
		{"last error", en.LastError}, {"next step", nextStep(en)}, {"waiting", en.Waiting}, {"conflicts", strings.Join(en.ConflictPaths, ", ")}, {"run output", en.RunDir},
		{"between clones", en.Conflict()},
	} {
		if kv[1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
		}
	}
	tw.Flush()
	if len(shown.Logs) > 0 {
		fmt.Fprintln(e.stdout, "test logs:")
		tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, l := range shown.Logs {
			where := l.Path
			if !l.Exists {
				where += " (none here: no test ran in this clone)"
			}
			fmt.Fprintf(tw, "  attempt %d\t%s\t%s\n", l.Attempt, l.At.Format(time.RFC3339), where)
		}
		tw.Flush()
	}
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

// untestedIn reports whether the last test of an entry's trail was skipped
// because merge.untested said so.
func untestedIn(trail []mergequeue.AuditStep) bool {
	for i := len(trail) - 1; i >= 0; i-- {
		if trail[i].To == mergequeue.Testing && trail[i].Skipped == "" {
			return trail[i].Reason == mergequeue.UntestedReason
		}
	}
	return false
}

// priorityText is an entry's priority and, when aging changed it, the
// effective one and why: "4 (effective 3: P4→P3 aged 7d)".
func priorityText(s mergequeue.Shown) string {
	if s.Aging != "" && s.EffectivePriority != nil {
		return fmt.Sprintf("%d (effective %d: %s)", s.Priority, *s.EffectivePriority, s.Aging)
	}
	return fmt.Sprint(s.Priority)
}

type MergePositionCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergePositionCmd) Run(e *env) error {
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	q, en, err := mq.Entry(e.ctx, c.ID)
	if err != nil {
		return err
	}
	p := q.PlacedIn(en, mq.Order(q))
	if e.JSON {
		return writeJSON(e.stdout, p)
	}
	switch {
	case p.Position == nil:
		fmt.Fprintf(e.stdout, "entry %d is %s: no position\n", en.ID, en.Status)
	case p.Aging != "":
		fmt.Fprintf(e.stdout, "entry %d: position %d of %d (%s)\n", en.ID, *p.Position, q.PendingCount, p.Aging)
	default:
		fmt.Fprintf(e.stdout, "entry %d: position %d of %d\n", en.ID, *p.Position, q.PendingCount)
	}
	return nil
}

type MergeCancelCmd struct {
	ID     string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
	Reason string `help:"Why, for the audit trail."`
}

func (c *MergeCancelCmd) Run(e *env) error {
	return changeEntry(e, "cancelled", func(mq *mqservice.Service) (*mergequeue.State, *mergequeue.Entry, error) {
		return mq.Cancel(e.ctx, c.ID, c.Reason)
	})
}

type MergeRetryCmd struct {
	ID string `arg:"" placeholder:"ENTRY" complete:"merge-entry" help:"Entry number, or a unique prefix (4+ characters) of its entry_ref (numbers change when clones' logs merge; refs do not)."`
}

func (c *MergeRetryCmd) Run(e *env) error {
	return changeEntry(e, "back in the queue", func(mq *mqservice.Service) (*mergequeue.State, *mergequeue.Entry, error) {
		return mq.Retry(e.ctx, c.ID)
	})
}

// changeEntry runs a change of one entry and reports it by number and ref.
func changeEntry(e *env, done string, change func(*mqservice.Service) (*mergequeue.State, *mergequeue.Entry, error)) error {
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	q, en, err := change(mq)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, q.PlacedIn(en, mq.Order(q)))
	}
	fmt.Fprintf(e.stdout, "entry %d %s (%s), ref %s\n", en.ID, done, en.Status, mergequeue.ShortRef(en.Ref))
	return nil
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
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	q, changed, err := mq.Freeze(e.ctx, on, reason)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"frozen": q.Frozen, "frozen_reason": q.FrozenReason, "changed": changed})
	}
	state := "unfrozen"
	if q.Frozen {
		state = "frozen"
	}
	if !changed {
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
	mq, err := e.mergequeue()
	if err != nil {
		return err
	}
	var out io.Writer
	if !e.JSON {
		out = e.stdout
	}
	r, err := mq.Train(e.ctx, c.Target, out)
	if err != nil {
		return err
	}
	mq.Store.DeferSave = true // the train saves projections once per entry (Runner.RunOne)
	r.Now = func() time.Time { t, _ := e.now(); return t }
	r.PauseAt, r.PauseFile = os.Getenv("SPOOL_TEST_MERGE_PAUSE"), os.Getenv("SPOOL_TEST_MERGE_PAUSE_FILE")
	results, err := r.Run(e.ctx, c.Once)
	if err != nil {
		return err
	}
	if e.JSON {
		if err := writeJSON(e.stdout, map[string]any{"processed": nonNil(results)}); err != nil {
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
		mq.Now = r.Now()
		q, err := mq.Queue(e.ctx)
		if err == nil && q.Frozen {
			fmt.Fprintf(e.stdout, "the merge queue is frozen (%s); nothing claimed\n", q.FrozenReason)
			return nil
		}
		waiting := 0
		var active []*mergequeue.Entry
		if err == nil {
			active = q.Active()
		}
		for _, en := range active {
			if en.Status == mergequeue.Pending && en.Waiting != "" {
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
