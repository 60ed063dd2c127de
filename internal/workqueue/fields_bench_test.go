package workqueue

import "testing"

// BenchmarkTaskRecords writes the tasks' table of benchState, details
// decoded (what a save does), and reads it back whole, every record and
// detail decoded: the codec of fields_gen.go, which BenchmarkDecodeTasks
// (the index alone) does not reach.
func BenchmarkTaskRecords(b *testing.B) {
	s := benchState(b)
	for _, t := range s.allTasks() {
		t.Detail()
	}
	p := NewTasksProjection(s)
	snap, err := p.MarshalState()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if _, err := p.MarshalState(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			q := NewTasksProjection(NewState())
			if err := q.UnmarshalState(snap); err != nil {
				b.Fatal(err)
			}
			for _, t := range q.State().allTasks() {
				t.Detail()
			}
		}
	})
}
