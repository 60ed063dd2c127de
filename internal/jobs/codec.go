package jobs

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/internal/table"
)

// The snapshot's jobs are encoded by hand (table.Enc): every command that
// reads the scheduler decodes all of them, and gob took 14 ms of a 25 ms
// `job show` at 10,000 jobs. The few quotas, schedules and workers follow
// as gob. Each job's record has its length before it, and the records are
// in id order: a snapshot whose checksum matched is read lazily
// (UnmarshalChecked), a job found by id without decoding the others.
//
// The queue section lists the queued jobs that used no slot time, with what a
// claim's lanes read of them (queueHeads): a claim decodes the other jobs
// and the first job of each lane only (Projection.Claimable).
//
//	magic | uvarint jobs | (uint32 length | job)… | uvarint length | queue | gob(rest)
//	queue: uvarint n | (uvarint record | uvarint rank | varint order | varint slots | off-peak | moved | owner | project)…
const snapshotMagic = "spool-jobs-6\n"

var errSnapshot = errors.New("jobs snapshot is damaged")

// rest is what follows the jobs.
type rest struct {
	Quotas    []*Quota
	Schedules []*Schedule
	Workers   []*Worker
}

func (s *State) marshal() ([]byte, error) {
	jobs := s.Sorted()
	w := &table.Enc{Buf: make([]byte, 0, 256*len(jobs)+64)}
	w.Buf = append(w.Buf, snapshotMagic...)
	w.Uint(uint64(len(jobs)))
	for _, j := range jobs {
		at := len(w.Buf)
		w.Buf = append(w.Buf, 0, 0, 0, 0)
		encodeJob(w, j)
		binary.LittleEndian.PutUint32(w.Buf[at:], uint32(len(w.Buf)-at-4))
	}
	q := &table.Enc{}
	n := 0
	for _, j := range jobs {
		if idle(j) {
			n++
		}
	}
	q.Uint(uint64(n))
	for i, j := range jobs {
		if idle(j) {
			q.Uint(uint64(i))
			q.Uint(uint64(j.Tier.Rank()))
			q.Int(j.Order)
			q.Int(int64(j.Slots))
			q.Bool(j.OffPeak)
			q.Bool(j.Moved)
			q.Str(j.Owner)
			q.Str(j.Project)
		}
	}
	w.Str(string(q.Buf))
	var r rest
	for _, k := range slices.Sorted(maps.Keys(s.Quotas)) {
		r.Quotas = append(r.Quotas, s.Quotas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Schedules)) {
		r.Schedules = append(r.Schedules, s.Schedules[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Workers)) {
		r.Workers = append(r.Workers, s.Workers[k])
	}
	buf := bytes.NewBuffer(w.Buf)
	err := gob.NewEncoder(buf).Encode(r)
	return buf.Bytes(), err
}

// idle says whether j is a queued job that has used no slot time: all a
// claim reads of it is its place in the queue (the queue section). The
// scheduler's other reads skip it: it holds no slots and used none (Tick,
// Busy, yielders, fair share, quotas).
func idle(j *Job) bool { return j.Status == Queued && len(j.Runs) == 0 }

// lazyJobs are a snapshot's jobs, not decoded yet.
type lazyJobs struct {
	recs  string  // the records; the jobs' strings are its bytes, or copies when mapped
	at    []int32 // where each job's record starts (after its length), in id order
	queue string  // the queue section
	// mapped says recs is a mapping of the file, unmapped once lazyJobs
	// is unreachable (UnmarshalMapped): a job is decoded from a copy of its
	// record, and a string read from recs is not kept past a use of lz.
	mapped bool
}

// index reads what marshal wrote, the jobs left encoded: their records
// found, the rest (quotas, schedules, workers) decoded into a new state.
// The strings are b's bytes (b is kept, not copied).
func index(b []byte) (*lazyJobs, *State, error) {
	body, ok := bytes.CutPrefix(b, []byte(snapshotMagic))
	if !ok {
		return nil, nil, errSnapshot
	}
	r := table.NewDec(unsafe.String(unsafe.SliceData(body), len(body)))
	n := r.Count() // at most the bytes left: at is at most 4 bytes a byte
	recs := r.Rest()
	lz := &lazyJobs{recs: recs, at: make([]int32, n)}
	if len(recs) > math.MaxInt32 {
		return nil, nil, errSnapshot
	}
	pos := 0
	for i := range n {
		if len(recs)-pos < 4 {
			return nil, nil, errSnapshot
		}
		l := le32(recs[pos:])
		if l > len(recs)-pos-4 {
			return nil, nil, errSnapshot
		}
		lz.at[i] = int32(pos + 4)
		pos += 4 + l
	}
	if r.Err() != nil {
		return nil, nil, errSnapshot
	}
	after := table.NewDec(recs[pos:])
	lz.queue = after.Str()
	if after.Err() != nil {
		return nil, nil, errSnapshot
	}
	var x rest
	if gob.NewDecoder(strings.NewReader(after.Rest())).Decode(&x) != nil {
		return nil, nil, errSnapshot
	}
	s := NewState()
	for _, q := range x.Quotas {
		s.Quotas[q.Key()] = q
	}
	for _, sc := range x.Schedules {
		s.Schedules[sc.ID] = sc
	}
	for _, w := range x.Workers {
		s.Workers[w.Name] = w
	}
	return lz, s, nil
}

func le32(s string) int {
	return int(uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24)
}

// rec is job i's record.
func (lz *lazyJobs) rec(i int) string {
	at := int(lz.at[i])
	l := le32(lz.recs[at-4:])
	return lz.recs[at : at+l]
}

// id is job i's id, its record's first field.
func (lz *lazyJobs) id(i int) string { return table.NewDec(lz.rec(i)).Str() }

// search is where id's record is, or would be.
func (lz *lazyJobs) search(id string) (int, bool) {
	i := sort.Search(len(lz.at), func(i int) bool { return lz.id(i) >= id })
	return i, i < len(lz.at) && lz.id(i) == id
}

// has says whether a job with id has a record.
func (lz *lazyJobs) has(id string) bool {
	_, ok := lz.search(id)
	return ok
}

// find decodes the job with id alone; nil when there is none.
func (lz *lazyJobs) find(id string) (*Job, error) {
	i, ok := lz.search(id)
	if !ok {
		return nil, nil
	}
	return lz.decode(i, &slabs{})
}

// decode decodes job i alone.
func (lz *lazyJobs) decode(i int, sl *slabs) (*Job, error) {
	rec := lz.rec(i)
	if lz.mapped {
		rec = strings.Clone(rec)
		runtime.KeepAlive(lz)
	}
	j := &Job{}
	r := table.NewDec(rec)
	decodeJob(r, j, sl)
	if r.End() != nil {
		return nil, errSnapshot
	}
	return j, nil
}

// eachQueued calls fn with each entry of the queue section.
func (lz *lazyJobs) eachQueued(fn func(e queued)) error {
	r := table.NewDec(lz.queue)
	n := r.Count()
	for range n {
		e := queued{rec: int(r.Uint()), rank: int(r.Uint()), order: r.Int(), slots: int(r.Int()),
			offPeak: r.Bool(), moved: r.Bool(), owner: r.Str(), project: r.Str()}
		if r.Err() != nil || e.rec < 0 || e.rec >= len(lz.at) {
			return errSnapshot
		}
		fn(e)
	}
	runtime.KeepAlive(lz)
	return r.End()
}

// queued is an entry of the queue section: an idle job.
type queued struct {
	rec            int // its record
	rank           int
	order          int64
	slots          int
	offPeak, moved bool
	owner, project string
}

// decodeAll decodes every job into s, but those s.Jobs has already (taken
// out one by one, and newer). A record that is not one whole job, or ids
// out of order (a job twice), fail it.
func (lz *lazyJobs) decodeAll(s *State) error {
	if lz.mapped { // the jobs outlive the mapping
		c := *lz
		c.recs, c.mapped = strings.Clone(lz.recs), false
		runtime.KeepAlive(lz)
		lz = &c
	}
	n := len(lz.at)
	jobs := make(map[string]*Job, n+len(s.Jobs))
	sl := &slabs{jobs: make([]Job, n)}
	r := table.NewDec("")
	r.Pooled()
	prev := ""
	for i := range n {
		j := &sl.jobs[i]
		if len(s.Jobs) > 0 {
			if id := lz.id(i); s.Jobs[id] != nil {
				if i > 0 && id <= prev {
					return errSnapshot
				}
				prev = id
				continue
			}
		}
		r.Reset(lz.rec(i))
		decodeJob(r, j, sl)
		if r.End() != nil || i > 0 && j.ID <= prev {
			return errSnapshot
		}
		prev = j.ID
		jobs[j.ID] = j
	}
	maps.Copy(jobs, s.Jobs)
	s.Jobs = jobs
	return nil
}

// unmarshal reads what marshal wrote, every job decoded. The jobs' strings
// are b's bytes (b is kept, not copied), and the jobs and their lists are
// carved out of a few slabs: at 10,000 jobs one allocation each was most
// of a `job show`.
func unmarshal(b []byte) (*State, error) {
	lz, s, err := index(b)
	if err != nil {
		return nil, err
	}
	if err := lz.decodeAll(s); err != nil {
		return nil, err
	}
	return s, nil
}

// slabs hand out the jobs' lists from shared arrays. Each list is a full
// slice expression (cap == len), so an append copies it out rather than
// writing into the next job's.
type slabs struct {
	jobs  []Job
	trail []Transition
	segs  []Segment
	runs  []Run
	codes []int
	procs []ProcRecord
}

func carve[T any](pool *[]T, n int) []T {
	if cap(*pool)-len(*pool) < n {
		*pool = make([]T, 0, max(n, 1024))
	}
	p := *pool
	start := len(p)
	p = p[:start+n]
	*pool = p
	return p[start : start+n : start+n]
}

func encodeJob(w *table.Enc, j *Job) {
	for _, s := range []string{j.ID, j.Name, j.Owner, j.Project, string(j.Tier), j.Schedule, string(j.Status), j.Worker, j.Error} {
		w.Str(s)
	}
	w.Int(int64(j.Slots))
	w.Int(int64(j.Segments))
	w.Int(j.Order)
	w.Int(int64(j.Attempts))
	for _, b := range []bool{j.OffPeak, j.Moved, j.PauseRequested, j.YieldRequested, j.CancelRequested} {
		w.Bool(b)
	}
	for _, t := range []time.Time{j.StartAfter, j.Occurrence, j.Submitted, j.Entered, j.LeaseUntil, j.FirstStart, j.Ended, j.GraceUntil} {
		putTime(w, t)
	}
	w.Strs(j.Argv)
	w.Uint(uint64(len(j.Segs)))
	for _, g := range j.Segs {
		w.Bool(g.Done)
		putTime(w, g.Started)
		putTime(w, g.Ended)
		w.Bool(g.ExitCode != nil)
		if g.ExitCode != nil {
			w.Int(int64(*g.ExitCode))
		}
		w.Str(g.OutputDir)
		w.Str(g.Worker)
	}
	w.Uint(uint64(len(j.Runs)))
	for _, run := range j.Runs {
		putTime(w, run.Start)
		putTime(w, run.End)
	}
	w.Uint(uint64(len(j.Trail)))
	for _, t := range j.Trail {
		putTime(w, t.At)
		w.Str(string(t.From))
		w.Str(string(t.To))
		w.Str(t.By)
		w.Str(t.Reason)
	}
	w.Bool(j.Holder != nil)
	if h := j.Holder; h != nil {
		w.Int(int64(h.PID))
		w.Int(int64(h.PGID))
		w.Uint(h.Start)
		w.Str(h.Boot)
		w.Str(h.NS)
	}
}

// decodeJob reads what encodeJob wrote into j; a damaged job leaves r
// failed. Empty lists read back nil, as they did from gob.
func decodeJob(r *table.Dec, j *Job, sl *slabs) {
	j.ID, j.Name, j.Owner, j.Project, j.Tier, j.Schedule = r.Str(), r.Str(), r.Str(), r.Str(), Tier(r.Str()), r.Str()
	j.Status, j.Worker, j.Error = Status(r.Str()), r.Str(), r.Str()
	j.Slots, j.Segments, j.Order, j.Attempts = int(r.Int()), int(r.Int()), r.Int(), int(r.Int())
	j.OffPeak, j.Moved, j.PauseRequested, j.YieldRequested, j.CancelRequested = r.Bool(), r.Bool(), r.Bool(), r.Bool(), r.Bool()
	j.StartAfter, j.Occurrence, j.Submitted, j.Entered = getTime(r), getTime(r), getTime(r), getTime(r)
	j.LeaseUntil, j.FirstStart, j.Ended, j.GraceUntil = getTime(r), getTime(r), getTime(r), getTime(r)
	j.Argv = r.Strs()
	if n := r.Count(); n > 0 {
		j.Segs = carve(&sl.segs, n)
		for i := range j.Segs {
			g := &j.Segs[i]
			g.Done, g.Started, g.Ended = r.Bool(), getTime(r), getTime(r)
			if r.Bool() {
				code := &carve(&sl.codes, 1)[0]
				*code = int(r.Int())
				g.ExitCode = code
			}
			g.OutputDir, g.Worker = r.Str(), r.Str()
		}
	}
	if n := r.Count(); n > 0 {
		j.Runs = carve(&sl.runs, n)
		for i := range j.Runs {
			j.Runs[i] = Run{Start: getTime(r), End: getTime(r)}
		}
	}
	if n := r.Count(); n > 0 {
		j.Trail = carve(&sl.trail, n)
		for i := range j.Trail {
			j.Trail[i] = Transition{At: getTime(r), From: Status(r.Str()), To: Status(r.Str()), By: r.Str(), Reason: r.Str()}
		}
	}
	if r.Bool() {
		h := &carve(&sl.procs, 1)[0]
		*h = ProcRecord{PID: int(r.Int()), PGID: int(r.Int()), Start: r.Uint(), Boot: r.Str(), NS: r.Str()}
		j.Holder = h
	}
}

// putTime keeps a UTC time of these centuries in 8 bytes; any other (a
// zone, a far date) as time's binary form, zone included, as gob did.
func putTime(w *table.Enc, t time.Time) {
	if t.Location() == time.UTC && (t.IsZero() || t.Year() > 1700 && t.Year() < 2200) {
		w.Bool(true)
		w.Time(t)
		return
	}
	b, _ := t.MarshalBinary() // an error only for a zone offset no time has
	w.Bool(false)
	w.Str(string(b))
}

func getTime(r *table.Dec) time.Time {
	if r.Bool() {
		return r.Time()
	}
	var t time.Time
	if t.UnmarshalBinary([]byte(r.Str())) != nil {
		r.Fail()
	}
	return t
}
