package workqueue

import "github.com/spoolhq/spool/internal/jsonout"

// The types of the long lists write themselves (jsonout.Appender), field
// by field as their declarations and tags say, byte for byte as
// encoding/json writes them: tasks.json, history.json and the CLI's --json
// lists hold thousands. TestAppendersAsTheLibrary fills every field.

// AppendJSON writes the task as encoding/json does.
func (t TaskJSON) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	t.appendFields(&o)
	return o.End()
}

// appendFields writes the task's fields; the types embedding TaskJSON
// write theirs after them, as encoding/json orders an embedded struct's
// fields where it is embedded.
func (t *TaskJSON) appendFields(o *jsonout.Object) {
	o.String("id", t.ID)
	o.String("title", t.Title)
	o.StringOmitEmpty("description", t.Description)
	o.StringOmitEmpty("design", t.Design)
	o.StringOmitEmpty("acceptance_criteria", t.AcceptanceCriteria)
	o.StringOmitEmpty("notes", t.Notes)
	o.StringOmitEmpty("status", t.Status)
	o.Int("priority", int64(t.Priority))
	o.StringOmitEmpty("issue_type", t.IssueType)
	o.StringOmitEmpty("assignee", t.Assignee)
	o.StringOmitEmpty("owner", t.Owner)
	o.Time("created_at", t.CreatedAt)
	o.StringOmitEmpty("created_by", t.CreatedBy)
	o.Time("updated_at", t.UpdatedAt)
	o.TimeOmitNil("closed_at", t.ClosedAt)
	o.StringOmitEmpty("close_reason", t.CloseReason)
	o.StringsOmitEmpty("labels", t.Labels)
	jsonout.ListOmitEmpty(o, "dependencies", t.Dependencies)
	jsonout.ListOmitEmpty(o, "comments", t.Comments)
}

// AppendJSON writes the dependency as encoding/json does.
func (d DepJSON) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.String("issue_id", d.IssueID)
	o.String("depends_on_id", d.DependsOnID)
	o.String("type", d.Type)
	o.Time("created_at", d.CreatedAt)
	o.StringOmitEmpty("created_by", d.CreatedBy)
	return o.End()
}

// AppendJSON writes the comment as encoding/json does.
func (c CommentJSON) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Int("id", c.ID)
	o.String("issue_id", c.IssueID)
	o.String("author", c.Author)
	o.String("text", c.Text)
	o.Time("created_at", c.CreatedAt)
	return o.End()
}

// AppendJSON writes the item as encoding/json does: the embedded task's
// fields (no name here shadows one of them), then the counts.
func (t ListItemJSON) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	t.TaskJSON.appendFields(&o)
	o.Int("dependency_count", int64(t.DependencyCount))
	o.Int("dependent_count", int64(t.DependentCount))
	return o.End()
}

// AppendJSON declines: encoding/json writes it. Declared so that
// DetailJSON does not inherit TaskJSON's, which knows neither its
// shadowing Labels, Dependencies and Comments nor Dependents and Parent.
func (DetailJSON) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }

// AppendJSON declines: encoding/json writes it. Declared so that
// RelatedJSON does not inherit TaskJSON's, which would leave out
// dependency_type.
func (RelatedJSON) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }

// AppendJSON writes the history entry as encoding/json does.
func (h EntryJSON) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.String("id", h.ID)
	o.String("status", h.Status)
	o.Int("attempts", int64(h.Attempts))
	o.Int("failures", int64(h.Failures))
	o.TimeOmitNil("last_attempt", h.LastAttempt)
	o.TimeOmitNil("last_attempt_ended_at", h.LastEndedAt)
	o.StringOmitEmpty("last_error", h.LastError)
	o.StringOmitEmpty("worker", h.Worker)
	o.TimeOmitNil("lease_until", h.LeaseUntil)
	o.TimeOmitNil("next_eligible_at", h.NextEligibleAt)
	o.StringOmitEmpty("block_reason", h.BlockReason)
	o.StringsOmitEmpty("pending_sync", h.PendingSync)
	o.StringsOmitEmpty("sync_failed", h.SyncFailed)
	o.StringsOmitEmpty("pending_hooks", h.PendingHooks)
	return o.End()
}
