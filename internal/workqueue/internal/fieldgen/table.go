package fieldgen

// Fields is the table of the task's fields: the fields of workqueue.Task and
// workqueue.TaskDetail that the snapshot's codec, the replay's spill and
// Task.base (the TaskJSON a task renders as) handle field by field. Its
// order is the snapshot's byte order: the task's record writes the Task
// fields in this order, then its blockers, its links, the ids of the tasks
// naming it and its detail; the detail writes the TaskDetail fields in this
// order, then its comments. A new field goes at the end of its part (a
// format change: bump workqueue.Spec.Version and tasksMagic, then run
// TestEncodersPinned with -update).
var Fields = []Field{
	// workqueue.Task: decoded with the record.
	{Name: "ID", Kind: Str, JSON: "ID"},
	{Name: "Title", Kind: Str, JSON: "Title", Spill: true},
	{Name: "Status", Kind: Str, JSON: "Status"},
	{Name: "Type", Kind: Str, JSON: "IssueType"},
	{Name: "Parent", Kind: Str}, // rendered as a dependency (Task.appendDeps)
	{Name: "Priority", Kind: Int, JSON: "Priority"},
	{Name: "CreatedAt", Kind: Time, JSON: "CreatedAt"},
	{Name: "LeaseUntil", Kind: Time}, // the history's to show
	{Name: "Labels", Kind: Strs, JSON: "Labels"},

	// workqueue.TaskDetail: decoded when asked for (Task.Detail).
	{Name: "Description", Detail: true, Kind: Str, JSON: "Description"},
	{Name: "Design", Detail: true, Kind: Str, JSON: "Design"},
	{Name: "Acceptance", Detail: true, Kind: Str, JSON: "AcceptanceCriteria"},
	{Name: "Notes", Detail: true, Kind: Str, JSON: "Notes"},
	{Name: "Assignee", Detail: true, Kind: Str, JSON: "Assignee"},
	{Name: "CreatedBy", Detail: true, Kind: Str, JSON: "CreatedBy"},
	{Name: "Owner", Detail: true, Kind: Str, JSON: "Owner"},
	{Name: "CloseReason", Detail: true, Kind: Str, JSON: "CloseReason"},
	{Name: "ParentBy", Detail: true, Kind: Str}, // the parent's dependency record
	{Name: "ExternalRef", Detail: true, Kind: Str, JSON: "ExternalRef"},
	{Name: "UpdatedAt", Detail: true, Kind: Time, JSON: "UpdatedAt"},
	{Name: "ClosedAt", Detail: true, Kind: Time, JSON: "ClosedAt"},
	{Name: "ParentAt", Detail: true, Kind: Time}, // the parent's dependency record
}

// HandWritten are the exported fields of Task and TaskDetail that the
// table leaves to hand-written code, and where that code is.
var HandWritten = map[string]string{
	"Task.Blockers": "encodeTask and decodeRecord (snapshot.go)",
	"Task.Links":    "encodeTask and decodeRecord (snapshot.go)",
}

// JSONElsewhere are the TaskJSON fields Task.base leaves to its callers.
var JSONElsewhere = map[string]bool{"Dependencies": true, "Comments": true}

// Appenders are the JSON types whose AppendJSON is generated from their
// declarations: field by field, in order, as encoding/json writes them.
var Appenders = []string{"TaskJSON", "DepJSON", "CommentJSON", "ListItemJSON", "EntryJSON", "BlockedJSON"}

// Payloads are the event payloads decoded on the fast path (payload.go):
// a function each, taking every member whose type the fast path knows.
var Payloads = []struct{ Func, Type string }{
	{"decodeComment", "CommentData"},
	{"decodeUpdated", "UpdatedData"},
	{"decodeCreated", "CreatedData"},
	{"decodeClaimed", "ClaimedData"}, // a catch-up's commonest, with heartbeats, in an agents' queue
	{"decodeHeartbeat", "HeartbeatData"},
	{"decodeFailed", "FailedData"},
}
