package prdqueue

import (
	"encoding/json"
	"time"

	"github.com/spoolhq/spool/projections"
)

// ManifestDir is where the manifests live, relative to the repository root.
const ManifestDir = "docs/prd/_queue"

// Manifest is docs/prd/_queue/<feature-slug>.json. Its fields and names are
// the manifest format planning tools already read, so they stay as they are.
type Manifest struct {
	FeatureSlug string         `json:"feature_slug"`
	Mode        string         `json:"mode"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	WorkerCap   int            `json:"worker_cap"`
	Items       []ManifestItem `json:"items"`
}

// ManifestItem is one PRD of a manifest.
type ManifestItem struct {
	PRDSlug         string    `json:"prd_slug"`
	PRDPath         string    `json:"prd_path"`
	EpicID          string    `json:"epic_id"`
	State           Status    `json:"state"`
	ApprovalVersion int       `json:"approval_version"`
	IdempotencyKey  string    `json:"idempotency_key"`
	RetryCount      int       `json:"retry_count"`
	BlockedReason   string    `json:"blocked_reason"`
	LastError       string    `json:"last_error"`
	Readiness       Readiness `json:"readiness"`
}

// Readiness is the queue-ready checks' outcome: the epic has ready work
// (selectable) and the doctor preflight passed.
type Readiness struct {
	Selectable bool `json:"selectable"`
	DoctorPass bool `json:"doctor_pass"`
}

// Manifest renders a feature's manifest.
func (s *State) Manifest(slug string) Manifest {
	f := s.Features[slug]
	m := Manifest{FeatureSlug: f.Slug, Mode: f.Mode, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt, WorkerCap: f.WorkerCap,
		Items: make([]ManifestItem, 0, len(f.Items))}
	for _, prd := range f.Items {
		m.Items = append(m.Items, s.ManifestItem(s.Items[ItemKey{slug, prd}]))
	}
	return m
}

// ManifestItem renders one item.
func (s *State) ManifestItem(it *Item) ManifestItem {
	p := s.PRDs[it.PRD]
	reason, why := s.Blocked(it)
	return ManifestItem{PRDSlug: it.PRD, PRDPath: p.Path, EpicID: p.Epic, State: it.State, ApprovalVersion: p.Version,
		IdempotencyKey: p.Key(), RetryCount: it.RetryCount, BlockedReason: reason, LastError: lastError(it, why),
		Readiness: Readiness{Selectable: it.Selectable, DoctorPass: it.DoctorPass}}
}

// lastError is the manifest's last_error: why the entry does not go on
// when something is wrong (a refusal, a file that cannot be read), else
// the last enqueue's error.
func lastError(it *Item, why string) string {
	if why != "" {
		return why
	}
	return it.LastError
}

// BlockedReason says why an item that could move on does not (Blocked).
func (s *State) BlockedReason(it *Item) string {
	reason, _ := s.Blocked(it)
	return reason
}

// Blocked says why an item that could move on does not: a reason (the
// manifest's blocked_reason) and, when it is something wrong rather than
// something awaited, a message that says what to do. In order: its file
// cannot be read, open questions, an approval the PRD's edit invalidated,
// a refusal of promote's (Refusal).
func (s *State) Blocked(it *Item) (reason, why string) {
	if reason := s.waitReason(it); reason != "" {
		if p := s.PRDs[it.PRD]; reason == p.Unreadable {
			why = p.UnreadableError + "; the entry waits until a sync reads the file again (or spool prd remove " + it.PRD + " --feature " + it.Feature + ")"
		}
		return reason, why
	}
	if it.State == Approved && !it.InFlight {
		if r := s.refusal(it); r != nil {
			return r.Code.Name, r.Message
		}
	}
	return "", ""
}

// waitReason is what an entry waits for: a file that can be read (in any
// submitted state but queued), the open questions' answers (approved), an
// approval again after an edit (awaiting_prd_approval).
func (s *State) waitReason(it *Item) string {
	p := s.PRDs[it.PRD]
	switch {
	case p.Unreadable != "" && it.State.Submitted() && it.State != Queued:
		return p.Unreadable
	case it.State == Approved && len(p.OpenQuestions) > 0:
		return BlockedOpenQuestions
	case it.State == AwaitingPRDApproval && p.Invalidated:
		return BlockedApprovalInvalidated
	}
	return ""
}

// WorkTreePaths are the manifests' paths.
func (p *Projection) WorkTreePaths() []string {
	slugs := p.s.FeatureSlugs()
	paths := make([]string, len(slugs))
	for i, slug := range slugs {
		paths[i] = ManifestDir + "/" + slug + ".json"
	}
	return paths
}

// Files renders every feature's manifest, in the work tree, which git
// ignores (store adds them to .git/info/exclude): views of the repository's
// log, they never conflict on a merge and never keep a checkout from working.
func (p *Projection) Files() ([]projections.File, error) {
	var out []projections.File
	for _, slug := range p.s.FeatureSlugs() {
		b, err := json.MarshalIndent(p.s.Manifest(slug), "", "  ")
		if err != nil {
			return nil, err
		}
		out = append(out, projections.File{Path: ManifestDir + "/" + slug + ".json", Data: append(b, '\n'), WorkTree: true})
	}
	return out, nil
}

// Row is one line of the reconciliation output a feature run ends with:
// where each PRD is, its epic, and why it is blocked or failed.
type Row struct {
	Feature       string `json:"feature_slug"`
	PRDSlug       string `json:"prd_slug"`
	State         Status `json:"state"`
	EpicID        string `json:"epic_id"`
	BlockedReason string `json:"blocked_reason"`
	LastError     string `json:"last_error"`
}

// Counts are the reconciliation's aggregates: discovered is every item past
// pending; approved every item whose two gates pass for its current
// content, queued or not; queued and queue_failed the items in those states.
type Counts struct {
	Discovered  int `json:"discovered"`
	Approved    int `json:"approved"`
	Queued      int `json:"queued"`
	QueueFailed int `json:"queue_failed"`
}

// Report is the reconciliation output.
type Report struct {
	Rows   []Row  `json:"rows"`
	Counts Counts `json:"counts"`
}

// Report renders the reconciliation of one feature, or of all ("").
func (s *State) Report(feature string) Report {
	r := Report{Rows: []Row{}}
	for _, slug := range s.FeatureSlugs() {
		if feature != "" && slug != feature {
			continue
		}
		for _, prd := range s.Features[slug].Items {
			it := s.Items[ItemKey{slug, prd}]
			p := s.PRDs[prd]
			reason, why := s.Blocked(it)
			r.Rows = append(r.Rows, Row{Feature: slug, PRDSlug: prd, State: it.State, EpicID: p.Epic,
				BlockedReason: reason, LastError: lastError(it, why)})
			if it.State != Pending {
				r.Counts.Discovered++
			}
			if p.PRDApproved() && p.BeadsApproved() {
				r.Counts.Approved++
			}
			switch it.State {
			case Queued:
				r.Counts.Queued++
			case QueueFailed:
				r.Counts.QueueFailed++
			}
		}
	}
	return r
}
