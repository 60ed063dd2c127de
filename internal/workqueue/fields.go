package workqueue

// A task's fields are handled field by field in several places: the
// snapshot's binary codec (snapshot.go), the spill a replay keeps them in
// (spill.go), the TaskJSON a task renders as (Task.base), the JSON
// appenders (json_append.go) and the payloads' fast path (payload.go).
// fields_gen.go holds that code, generated from one table
// (internal/fieldgen/table.go) and the types' declarations, as straight-line
// code: a save encodes 100,000 records. TestFieldsGenerated fails when it is
// stale; TestEncodersPinned when the snapshot or the JSON files change
// without a projection version bump.
//
// To add a task field:
//
//  1. Declare it on Task (read with the record) or TaskDetail (read when
//     asked for), and on TaskJSON where bd puts it if bd shows it.
//  2. Add it to fieldgen.Fields, at the end of its part (Task or
//     TaskDetail), naming its TaskJSON field.
//  3. Add it to the events that set it (events.go: its json tag is the
//     payload's member, decoded on the fast path when its type has a
//     setter), to their fold (state.go: applyTaskTo, imported) and to
//     what decides them (decide.go: NewTask, Update). The empty-update
//     checks (Update.Empty, UpdatedData.labelsOnly) are tested field by
//     field: TestEmptyChecksSeeEveryField.
//  4. go generate ./internal/workqueue/
//  5. Bump Spec.Version and tasksMagic, and record the new output:
//     go test ./internal/workqueue/ -run TestEncodersPinned -update
//
//go:generate go run ./internal/fieldgen/gen
