package mergequeue

import (
	"strconv"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// legacySubmitted is a merge.submitted event as a spool older than
// workspace identities wrote it: no workspace_id, and the dedupe key's first
// part is the worktree directory's base name.
func legacySubmitted(writer string, seq uint64, ws, worktree, branch, change, source string, head int) eventlog.Event {
	return rawEvent(writer, seq, seq, EvSubmitted, `{"entry_id":`+strconv.Itoa(int(seq))+`,"to":"pending","workspace":"`+ws+`","worktree":"`+worktree+
		`","branch":"`+branch+`","change_id":"`+change+`","change_id_source":"`+source+`","dedupe_key":"`+ws+":"+change+`","head_sha":"`+sha(head)+`","priority":2}`)
}

// An entry an older spool queued has no workspace_id; its identity is the
// name. A submission from the same worktree of the same clone after the
// upgrade finds it again: it updates the entry (or is refused as the
// workspace's second change), never queues a second active entry for one
// worktree. Other worktrees and other clones are other workspaces.
func TestSubmitAfterUpgradeFindsLegacyEntry(t *testing.T) {
	const path = "/src/repo/.wt/feat"
	ada := "a@example.com" // rawEvent's actor for writer "a"
	upgraded := func(mod func(*SubmitRequest)) SubmitRequest {
		r := SubmitRequest{Workspace: "feat", WorkspaceID: "a/feat", Worktree: path, Branch: "feat", HeadSHA: sha(2),
			ChangeID: "Cx", ChangeIDSource: SourceTrailer, Actor: ada}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	cases := []struct {
		name    string
		log     []eventlog.Event
		req     SubmitRequest
		want    SubmissionType // "" : refused with code
		code    string
		entryID int64
		active  int
	}{
		{name: "same worktree, same change: updated",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(nil), want: SubmissionUpdated, entryID: 1, active: 1},
		{name: "same worktree, generated change id: remembered, updated",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Igen", SourceGenerated, 1)},
			req: upgraded(func(r *SubmitRequest) { r.ChangeID, r.ChangeIDSource = "", "" }), want: SubmissionUpdated, entryID: 1, active: 1},
		{name: "same worktree, the train holds the old head: concurrent modification",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1),
				rawEvent("a", 2, 2, EvClaimed, `{"entry_id":1,"entry_ref":"a-1","from":"pending","to":"claimed","head_sha":"`+sha(1)+`","runner":"r1","lease_until":"2030-01-01T00:00:00Z"}`)},
			req: upgraded(nil), code: CodeConcurrentModification.Name, active: 1},
		{name: "same worktree, another change: already in queue",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(func(r *SubmitRequest) { r.ChangeID = "Cy" }), code: CodeAlreadyInQueue.Name, active: 1},
		{name: "same worktree, another actor: unauthorized",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(func(r *SubmitRequest) { r.Actor = "bob@example.com" }), code: CodeUnauthorizedWorkspace.Name, active: 1},
		{name: "primary worktree (identity: the writer id alone): updated",
			log: []eventlog.Event{legacySubmitted("a", 1, "repo", "/src/repo", "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(func(r *SubmitRequest) { r.Workspace, r.WorkspaceID, r.Worktree = "repo", "a", "/src/repo" }), want: SubmissionUpdated, entryID: 1, active: 1},
		{name: "the legacy entry was cancelled: a new entry under the new identity",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1),
				rawEvent("a", 2, 2, EvCancelled, `{"entry_id":1,"entry_ref":"a-1","from":"pending","to":"cancelled"}`)},
			req: upgraded(nil), want: SubmissionNew, entryID: 2, active: 1},
		{name: "another worktree with the same name: a new entry",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(func(r *SubmitRequest) { r.WorkspaceID, r.Worktree, r.ChangeID = "a/feat1", "/elsewhere/feat", "Cz" }), want: SubmissionNew, entryID: 2, active: 2},
		{name: "the same path on another clone: a new entry",
			log: []eventlog.Event{legacySubmitted("a", 1, "feat", path, "feat", "Cx", SourceTrailer, 1)},
			req: upgraded(func(r *SubmitRequest) { r.WorkspaceID = "b/feat" }), want: SubmissionNew, entryID: 2, active: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := foldAll(c.log)
			at := t0.Add(time.Hour)
			sub, err := DecideSubmit(s, c.req, pol, at)
			if c.code != "" {
				wantCode(t, err, c.code)
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if sub.Type != c.want || sub.EntryID != c.entryID {
					t.Fatalf("got %s entry %d, want %s entry %d", sub.Type, sub.EntryID, c.want, c.entryID)
				}
				fold(t, s, at, c.req.Actor, sub.Drafts)
			}
			if n := s.ActiveCount(); n != c.active {
				t.Fatalf("%d active entries, want %d", n, c.active)
			}
			checkInvariants(t, s)
			if c.want != SubmissionUpdated {
				return
			}
			e := s.Entry(1)
			if e.HeadSHA != sha(2) || e.Workspace != c.req.Workspace {
				t.Fatalf("entry %+v", e)
			}
			// and again: still the one entry
			again := c.req
			again.HeadSHA = sha(3)
			if sub := submit(t, s, again, at.Add(time.Second)); sub.EntryID != 1 || sub.Type != SubmissionUpdated || s.ActiveCount() != 1 {
				t.Fatalf("again: %+v, %d active", sub, s.ActiveCount())
			}
		})
	}
}
