package jobs

import "github.com/spoolhq/spool/internal/jsonout"

// AppendJSON writes the Job as its MarshalJSON does through encoding/json
// (jsonout): jobs.json, every job indented, is rewritten at each save of
// the scheduler, and encoding/json's reflection, compaction and indenting
// of 10,000 jobs were a third of the CPU of a run of job submits.
func (j Job) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	f.EscapeHTML = true // MarshalJSON's json.Marshal escapes, whatever the encoder around it says
	o := jsonout.NewObject(dst, f)
	o.String("id", j.ID)
	o.String("name", j.Name)
	o.String("owner", j.Owner)
	o.StringOmitEmpty("project", j.Project)
	o.String("priority", string(j.Tier))
	o.Int("gpus", int64(j.Slots))
	o.Int("segments", int64(j.Segments))
	o.Strings("argv", j.Argv)
	o.TimeOmitZero("start_after", j.StartAfter)
	o.BoolOmitEmpty("off_peak", j.OffPeak)
	o.StringOmitEmpty("schedule", j.Schedule)
	o.TimeOmitZero("occurrence", j.Occurrence)
	o.String("status", string(j.Status))
	o.Time("submitted_at", j.Submitted)
	o.TimeOmitZero("entered_queue_at", j.Entered)
	o.Int("order", j.Order)
	o.BoolOmitEmpty("moved", j.Moved)
	o.StringOmitEmpty("worker", j.Worker)
	o.TimeOmitZero("lease_until", j.LeaseUntil)
	if j.Holder != nil {
		o.Value("holder", j.Holder)
	}
	if j.Attempts != 0 {
		o.Int("attempts", int64(j.Attempts))
	}
	o.TimeOmitZero("first_dispatched_at", j.FirstStart)
	o.TimeOmitZero("ended_at", j.Ended)
	o.StringOmitEmpty("error", j.Error)
	o.BoolOmitEmpty("pause_requested", j.PauseRequested)
	o.BoolOmitEmpty("yield_requested", j.YieldRequested)
	o.BoolOmitEmpty("cancel_requested", j.CancelRequested)
	o.TimeOmitZero("grace_until", j.GraceUntil)
	jsonout.List(&o, "segment_runs", j.SegmentRuns())
	jsonout.ListOmitEmpty(&o, "runs", j.Runs)
	jsonout.List(&o, "trail", j.Trail)
	return o.End()
}

func (p *ProcRecord) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Int("pid", int64(p.PID))
	o.Int("pgid", int64(p.PGID))
	o.Uint("start", p.Start)
	o.StringOmitEmpty("boot", p.Boot)
	o.StringOmitEmpty("ns", p.NS)
	return o.End()
}

func (s Segment) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Bool("done", s.Done)
	o.TimeOmitZero("started_at", s.Started)
	o.TimeOmitZero("ended_at", s.Ended)
	if s.ExitCode != nil {
		o.Int("exit_code", int64(*s.ExitCode))
	}
	o.StringOmitEmpty("output_dir", s.OutputDir)
	o.StringOmitEmpty("worker", s.Worker)
	return o.End()
}

func (r Run) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Time("start", r.Start)
	o.Time("end", r.End)
	return o.End()
}

func (t Transition) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Time("at", t.At)
	o.StringOmitEmpty("from", string(t.From))
	o.String("to", string(t.To))
	o.String("by", t.By)
	o.StringOmitEmpty("reason", t.Reason)
	return o.End()
}
