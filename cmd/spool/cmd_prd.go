package main

import (
	"fmt"
	"maps"
	"strings"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/prdqueue"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
)

// PRDCmd is the PRD queue: per-feature runs whose PRDs become queued work
// only once both approval gates pass and no open questions remain.
type PRDCmd struct {
	Start    PRDStartCmd    `cmd:"" help:"Start a feature run (its manifest is docs/prd/_queue/FEATURE.json)."`
	Add      PRDAddCmd      `cmd:"" help:"Add a PRD to a feature run."`
	Discover PRDDiscoverCmd `cmd:"" help:"Start a PRD's discovery (pending → in_discovery)."`
	Submit   PRDSubmitCmd   `cmd:"" help:"Send a PRD for approval (→ awaiting_prd_approval)."`
	Approve  PRDApproveCmd  `cmd:"" help:"Write approved into a gate of the PRD's front matter, and record it."`
	Sync     PRDSyncCmd     `cmd:"" help:"Read every PRD file and record what changed (the git hooks run it)."`
	Promote  PRDPromoteCmd  `cmd:"" help:"Enqueue every runnable PRD as an epic (sync first)."`
	Retry    PRDRetryCmd    `cmd:"" help:"Put a queue_failed PRD back for the next promote."`
	Check    PRDCheckCmd    `cmd:"" help:"Record the queue-ready checks of queued PRDs: selectable work, spool doctor."`
	Report   PRDReportCmd   `cmd:"" help:"The reconciliation: a row per PRD and the counts."`
	Show     PRDShowCmd     `cmd:"" help:"One PRD's manifest entry and what its file says."`
	List     PRDListCmd     `cmd:"" help:"The manifests of every feature run, or of one."`
	Remove   PRDRemoveCmd   `cmd:"" help:"Take a PRD out of a feature run."`

	ApplyUpdates PRDApplyUpdatesCmd `cmd:"" name:"apply-updates" help:"Apply a proposal's section updates to prd.json and commit that file alone."`
}

type PRDStartCmd struct {
	Feature   string `arg:"" help:"The feature's slug."`
	Mode      string `default:"conflict-aware" enum:"conflict-aware,sequential" help:"conflict-aware or sequential."`
	WorkerCap int    `default:"2" help:"How many PRDs of the run are enqueued at once."`
}

func (c *PRDStartCmd) Run(e *env) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	m, created, err := q.Start(e.ctx, c.Feature, c.Mode, c.WorkerCap)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, m)
	}
	verb := "started"
	if !created {
		verb = "already started"
	}
	fmt.Fprintf(e.stdout, "%s feature %s (%s, %d workers): %s/%s.json\n", verb, c.Feature, m.Mode, m.WorkerCap, prdqueue.ManifestDir, c.Feature)
	return nil
}

type PRDAddCmd struct {
	Feature string `arg:"" help:"The feature's slug."`
	PRD     string `arg:"" name:"prd" help:"The PRD's slug."`
	Path    string `help:"The PRD file, relative to the repository root (default docs/prd/PRD.md)."`
}

func (c *PRDAddCmd) Run(e *env) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	it, added, err := q.Add(e.ctx, c.Feature, c.PRD, c.Path)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, it)
	}
	if added {
		fmt.Fprintf(e.stdout, "added %s (%s) to %s\n", it.PRDSlug, it.PRDPath, c.Feature)
	} else {
		fmt.Fprintf(e.stdout, "%s is in %s already\n", it.PRDSlug, c.Feature)
	}
	return nil
}

// prdRef names a PRD, and its feature when several name it.
type prdRef struct {
	PRD     string `arg:"" name:"prd" help:"The PRD's slug."`
	Feature string `help:"The feature run, when more than one has this PRD."`
}

type PRDDiscoverCmd struct{ prdRef }

func (c *PRDDiscoverCmd) Run(e *env) error {
	return prdItemCmd(e, func(q *prdservice.Service) (prdqueue.ManifestItem, error) { return q.Discover(e.ctx, c.PRD, c.Feature) })
}

type PRDSubmitCmd struct{ prdRef }

func (c *PRDSubmitCmd) Run(e *env) error {
	return prdItemCmd(e, func(q *prdservice.Service) (prdqueue.ManifestItem, error) { return q.Submit(e.ctx, c.PRD, c.Feature) })
}

type PRDApproveCmd struct {
	prdRef
	Gate string `required:"" enum:"prd,beads" help:"prd or beads."`
}

func (c *PRDApproveCmd) Run(e *env) error {
	return prdItemCmd(e, func(q *prdservice.Service) (prdqueue.ManifestItem, error) {
		return q.Approve(e.ctx, c.PRD, c.Feature, c.Gate)
	})
}

type PRDRetryCmd struct{ prdRef }

func (c *PRDRetryCmd) Run(e *env) error {
	return prdItemCmd(e, func(q *prdservice.Service) (prdqueue.ManifestItem, error) { return q.Retry(e.ctx, c.PRD, c.Feature) })
}

type PRDRemoveCmd struct{ prdRef }

func (c *PRDRemoveCmd) Run(e *env) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	if err := q.Remove(e.ctx, c.PRD, c.Feature); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"prd_slug": c.PRD, "removed": "true"})
	}
	fmt.Fprintf(e.stdout, "removed %s\n", c.PRD)
	return nil
}

// prdItemCmd runs a command about one PRD and prints its manifest entry.
func prdItemCmd(e *env, do func(*prdservice.Service) (prdqueue.ManifestItem, error)) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	it, err := do(q)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, it)
	}
	printPRDItems(e, []prdqueue.ManifestItem{it})
	return nil
}

func printPRDItems(e *env, items []prdqueue.ManifestItem) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, it := range items {
		fmt.Fprint(tw, row(text(it.PRDSlug), string(it.State), orDash(it.EpicID), text(it.IdempotencyKey),
			orDash(text(it.BlockedReason)), orDash(text(it.LastError))))
	}
	tw.Flush()
}

// featureArg is an optional feature slug: one feature run, or all.
type featureArg struct {
	Feature string `arg:"" optional:"" help:"The feature's slug (default: every feature run)."`
}

type PRDSyncCmd struct{ featureArg }

func (c *PRDSyncCmd) Run(e *env) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	n, err := q.Sync(e.ctx, c.Feature)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]int{"events": n})
	}
	if n == 0 {
		fmt.Fprintln(e.stdout, "nothing changed")
	} else {
		fmt.Fprintf(e.stdout, "recorded %d changes\n", n)
	}
	return nil
}

type PRDPromoteCmd struct {
	featureArg
	OfflineFlag
}

func (c *PRDPromoteCmd) Run(e *env) error {
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	done, err := q.Promote(e.ctx, c.Feature)
	if e.JSON && err == nil {
		out := make([]map[string]any, 0, len(done))
		for _, p := range done {
			row := map[string]any{"feature_slug": p.Feature, "prd_slug": p.PRD, "idempotency_key": p.Key,
				"epic_id": p.Epic, "failed": p.Failed, "error": p.Error}
			if p.Refused {
				row["refused"] = true
			}
			if p.Refused || p.Failed {
				row["code"] = fault.Classify(p.Err).Code
			}
			out = append(out, row)
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
		return notQueued(done)
	}
	for _, p := range done {
		switch {
		case p.Refused:
			fmt.Fprintf(e.stdout, "%s  refused  %s\n", text(p.PRD), text(fault.Classify(p.Err).Code))
		case p.Failed:
			fmt.Fprintf(e.stdout, "%s  queue_failed  %s\n", text(p.PRD), text(p.Error))
		default:
			fmt.Fprintf(e.stdout, "%s  queued  %s  (%s)\n", text(p.PRD), p.Epic, text(p.Key))
		}
	}
	if err != nil {
		return err // what was done is printed: the rest stays in flight for the next promote
	}
	if len(done) == 0 {
		fmt.Fprintln(e.stdout, "nothing runnable")
	}
	return notQueued(done)
}

// notQueued is the error of a promote that left entries it was asked to
// promote unqueued: refused, or queue_failed after both attempts. The
// others went on; this names every one left, with its code (a refusal's,
// or the error of the failed enqueue) and what to do. The error's code and
// fields are the first one's; not_queued lists them all.
func notQueued(done []prdservice.Promoted) error {
	var first *fault.Error
	var lines []string
	var list []map[string]any
	for _, p := range done {
		if !p.Refused && !p.Failed {
			continue
		}
		f := fault.Classify(p.Err)
		state, msg := prdqueue.Approved, f.Message
		if p.Failed {
			state = prdqueue.QueueFailed
			msg = fmt.Sprintf("queue_failed after two attempts: %s; when the cause is fixed: spool prd retry %s --feature %s", p.Error, p.PRD, p.Feature)
		}
		if first == nil {
			first = f
		}
		lines = append(lines, fmt.Sprintf("%s (feature %s): %s: %s", p.PRD, p.Feature, f.Code, msg))
		list = append(list, map[string]any{"feature_slug": p.Feature, "prd_slug": p.PRD, "state": state, "code": f.Code, "message": msg})
	}
	if first == nil {
		return nil
	}
	out := *first
	out.Fields = maps.Clone(first.Fields)
	if out.Fields == nil {
		out.Fields = map[string]any{}
	}
	out.Fields["not_queued"] = list
	out.Message = fmt.Sprintf("%d not queued: %s", len(list), strings.Join(lines, "; "))
	return &out
}

type PRDCheckCmd struct{ featureArg }

func (c *PRDCheckCmd) Run(e *env) error {
	pass := true
	for _, ch := range doctor(e, false) {
		if ch.Status == "fail" {
			pass = false
		}
	}
	q, err := e.prdqueue()
	if err != nil {
		return err
	}
	st, err := q.Check(e.ctx, c.Feature, pass)
	if err != nil {
		return err
	}
	type checked struct {
		prdqueue.ManifestItem
		ready bool
	}
	var items []checked
	for _, slug := range st.FeatureSlugs() {
		if c.Feature == "" || slug == c.Feature {
			for _, prd := range st.Features[slug].Items {
				it := st.Items[prdqueue.ItemKey{Feature: slug, PRD: prd}]
				items = append(items, checked{st.ManifestItem(it), st.QueueReady(it)})
			}
		}
	}
	if e.JSON {
		out := make([]map[string]any, 0, len(items))
		for _, it := range items {
			out = append(out, map[string]any{"prd_slug": it.PRDSlug, "state": it.State, "epic_id": it.EpicID,
				"readiness": it.Readiness, "queue_ready": it.ready})
		}
		return writeJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, it := range items {
		ready := "not queue-ready"
		if it.ready {
			ready = "queue-ready"
		}
		fmt.Fprint(tw, row(text(it.PRDSlug), string(it.State), orDash(it.EpicID),
			fmt.Sprintf("selectable=%v doctor_pass=%v", it.Readiness.Selectable, it.Readiness.DoctorPass), ready))
	}
	return tw.Flush()
}

// readPRDs reads the PRD queue (no lock); a feature named must exist.
func readPRDs(e *env, feature string) (*prdqueue.State, error) {
	q, err := e.prdqueue()
	if err != nil {
		return nil, err
	}
	return q.ReadFeature(e.ctx, feature)
}

type PRDReportCmd struct{ featureArg }

func (c *PRDReportCmd) Run(e *env) error {
	st, err := readPRDs(e, c.Feature)
	if err != nil {
		return err
	}
	r := st.Report(c.Feature)
	if e.JSON {
		return writeJSON(e.stdout, r)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, row("PRD", "STATE", "EPIC", "BLOCKED", "LAST ERROR"))
	for _, x := range r.Rows {
		fmt.Fprint(tw, row(text(x.PRDSlug), string(x.State), orDash(x.EpicID), orDash(text(x.BlockedReason)), orDash(text(x.LastError))))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "discovered %d  approved %d  queued %d  queue_failed %d\n",
		r.Counts.Discovered, r.Counts.Approved, r.Counts.Queued, r.Counts.QueueFailed)
	return nil
}

type PRDShowCmd struct{ prdRef }

func (c *PRDShowCmd) Run(e *env) error {
	st, err := readPRDs(e, "") // FindItem checks the feature
	if err != nil {
		return err
	}
	it, err := st.FindItem(c.PRD, c.Feature)
	if err != nil {
		return err
	}
	m, p := st.ManifestItem(it), st.PRDs[it.PRD]
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"feature_slug": it.Feature, "item": m, "prd_approval": p.PRDGate,
			"beads_approval": p.BeadsGate, "open_questions": nonNil(p.OpenQuestions), "queue_ready": st.QueueReady(it)})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, row(text(m.PRDSlug), string(m.State)))
	fmt.Fprint(tw, row("feature", text(it.Feature)))
	fmt.Fprint(tw, row("file", text(m.PRDPath)))
	fmt.Fprint(tw, row("gates", fmt.Sprintf("prd_approval=%q beads_approval=%q", p.PRDGate, p.BeadsGate)))
	fmt.Fprint(tw, row("approval", fmt.Sprintf("version %d, key %s", m.ApprovalVersion, text(m.IdempotencyKey))))
	fmt.Fprint(tw, row("epic", orDash(m.EpicID)))
	if m.BlockedReason != "" {
		fmt.Fprint(tw, row("blocked", text(m.BlockedReason)))
	}
	if m.LastError != "" {
		fmt.Fprint(tw, row("last error", text(m.LastError)))
	}
	for i, q := range p.OpenQuestions {
		label := ""
		if i == 0 {
			label = "open questions"
		}
		fmt.Fprint(tw, row(label, text(q)))
	}
	return tw.Flush()
}

type PRDListCmd struct{ featureArg }

func (c *PRDListCmd) Run(e *env) error {
	st, err := readPRDs(e, c.Feature)
	if err != nil {
		return err
	}
	var out []prdqueue.Manifest
	for _, slug := range st.FeatureSlugs() {
		if c.Feature == "" || slug == c.Feature {
			out = append(out, st.Manifest(slug))
		}
	}
	if e.JSON {
		return writeJSON(e.stdout, nonNil(out))
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "no feature runs (spool prd start FEATURE)")
	}
	for i, m := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "%s  %s  %d workers  %d PRDs\n", m.FeatureSlug, m.Mode, m.WorkerCap, len(m.Items))
		printPRDItems(e, m.Items)
	}
	return nil
}
