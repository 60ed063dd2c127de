package jobs

import (
	"regexp"
	"sync"
)

// Limits on what a job may ask for. The CLI refuses more (a usage error,
// nothing appended) and the fold skips an event that asks for more:
// anyone who can push writes events, and a count is never what spool
// allocates or loops by unchecked.
const (
	SegmentLimit = 10_000 // segments of one job
	SlotLimit    = 1024   // slots a job needs, or a worker offers
)

var (
	// jobID is what SubmitJob (ids.New) and Tick (an occurrence:
	// job-<schedule>-<20060102t1504[05]>) make; nothing else names a job.
	// The id names the job's output directory (.git/spool/jobs/<id>).
	// Compiled at the first use, not at every spool command's start.
	jobID = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^job-[0-9a-z]{1,32}(-[0-9]{8}t[0-9]{4}([0-9]{2})?)?$`)
	})
	scheduleID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sched-[0-9a-z]{1,32}$`) })
)

// ValidJobID reports whether id is a job id spool makes.
func ValidJobID(id string) bool { return jobID().MatchString(id) }

func validScheduleID(id string) bool { return scheduleID().MatchString(id) }

// usable reports whether a submitted job is one SubmitJob could have
// decided: a command, and segments and slots within the limits.
func (d *SubmittedData) usable() bool {
	return d.Segments >= 1 && d.Segments <= SegmentLimit && d.Slots >= 1 && d.Slots <= SlotLimit &&
		len(d.Argv) > 0 && d.Argv[0] != ""
}
