package jobs

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"maps"
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
// as gob. The records are in id order, where each starts is in a table
// before them: a snapshot whose checksum matched is read lazily
// (UnmarshalChecked), a job found by id without decoding the others.
//
// The claim section is what a claim reads (Projection.Claimable): the
// records of every job but the idle ones, and the idle ones in groups of
// one tier, owner, project, off-peak and moved flag (a lane holds one or
// more groups), each group in queue order with each job's slots. A claim
// decodes the jobs that are not idle, and of each group it reads the
// first job it could take.
//
//	magic | uvarint jobs | uint32 offset × (jobs+1) | records | uvarint length | claim | gob(rest)
//	claim: uvarint n | uvarint record delta × n | uvarint groups | group…
//	group: uvarint rank | off-peak | moved | owner | project | uvarint length | (uvarint record | varint order | uvarint slots)…
const snapshotMagic = "spool-jobs-7\n"

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
	offs := len(w.Buf)
	w.Buf = append(w.Buf, make([]byte, 4*(len(jobs)+1))...)
	recs := len(w.Buf)
	for i, j := range jobs {
		binary.LittleEndian.PutUint32(w.Buf[offs+4*i:], uint32(len(w.Buf)-recs))
		encodeJob(w, j)
	}
	binary.LittleEndian.PutUint32(w.Buf[offs+4*len(jobs):], uint32(len(w.Buf)-recs))
	w.Str(string(claimSection(jobs)))
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
// claim reads of it is its place in the queue (the claim section). The
// scheduler's other reads skip it: it holds no slots and used none (Tick,
// Busy, yielders, fair share, quotas).
func idle(j *Job) bool { return j.Status == Queued && len(j.Runs) == 0 }

// groupKey is what puts two idle jobs in one group: whatever a lane's key
// holds under any policy.
type groupKey struct {
	rank           int
	offPeak, moved bool
	owner, project string
}

func (k groupKey) compare(o groupKey) int {
	return cmp.Or(cmp.Compare(k.rank, o.rank), boolCompare(k.offPeak, o.offPeak), boolCompare(k.moved, o.moved),
		strings.Compare(k.owner, o.owner), strings.Compare(k.project, o.project))
}

func boolCompare(a, b bool) int {
	if a == b {
		return 0
	}
	if a {
		return 1
	}
	return -1
}

// claimSection writes the claim section of jobs, sorted by id.
func claimSection(jobs []*Job) []byte {
	w := &table.Enc{}
	groups := map[groupKey][]int{}
	var others []int
	for i, j := range jobs {
		if !idle(j) {
			others = append(others, i)
			continue
		}
		k := groupKey{j.Tier.Rank(), j.OffPeak, j.Moved, j.Owner, j.Project}
		groups[k] = append(groups[k], i)
	}
	w.Uint(uint64(len(others)))
	prev := 0
	for _, i := range others {
		w.Uint(uint64(i - prev))
		prev = i
	}
	w.Uint(uint64(len(groups)))
	e := &table.Enc{}
	for _, k := range slices.SortedFunc(maps.Keys(groups), groupKey.compare) {
		recs := groups[k]
		slices.SortFunc(recs, func(a, b int) int { return cmp.Or(cmp.Compare(jobs[a].Order, jobs[b].Order), cmp.Compare(a, b)) })
		w.Uint(uint64(k.rank))
		w.Bool(k.offPeak)
		w.Bool(k.moved)
		w.Str(k.owner)
		w.Str(k.project)
		e.Buf = e.Buf[:0]
		for _, i := range recs {
			e.Uint(uint64(i))
			e.Int(jobs[i].Order)
			e.Uint(uint64(jobs[i].Slots))
		}
		w.Str(string(e.Buf))
	}
	return w.Buf
}

// lazyJobs are a snapshot's jobs, not decoded yet.
type lazyJobs struct {
	n     int    // jobs
	offs  string // where each record starts in recs, and where the last ends: uint32s
	recs  string // the records; the jobs' strings are its bytes, or copies when mapped
	claim string // the claim section
	// mapped says the strings are a mapping of the file, unmapped once
	// lazyJobs is unreachable (UnmarshalMapped): a job is decoded from a
	// copy of its record, and a string read from them is kept only where
	// lz stays reachable (a claim's lanes hold the state, which holds lz).
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
	lz := &lazyJobs{n: r.Count()} // at most the bytes left
	lz.offs = r.Raw(4 * (lz.n + 1))
	if r.Err() != nil {
		return nil, nil, errSnapshot
	}
	lz.recs = r.Raw(le32(lz.offs[4*lz.n:]))
	lz.claim = r.Str()
	if r.Err() != nil {
		return nil, nil, errSnapshot
	}
	var x rest
	if gob.NewDecoder(strings.NewReader(r.Rest())).Decode(&x) != nil {
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

// rec is job i's record; "" (which does not decode) when the table is
// damaged.
func (lz *lazyJobs) rec(i int) string {
	from, to := le32(lz.offs[4*i:]), le32(lz.offs[4*i+4:])
	if from > to || to > len(lz.recs) {
		return ""
	}
	return lz.recs[from:to]
}

// id is job i's id, its record's first field.
func (lz *lazyJobs) id(i int) string { return table.NewDec(lz.rec(i)).Str() }

// search is where id's record is, or would be.
func (lz *lazyJobs) search(id string) (int, bool) {
	i := sort.Search(lz.n, func(i int) bool { return lz.id(i) >= id })
	return i, i < lz.n && lz.id(i) == id
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

// others calls fn with the record of every job that is not idle, in
// order, and returns a reader of the groups after them.
func (lz *lazyJobs) others(fn func(rec int)) (*table.Dec, error) {
	r := table.NewDec(lz.claim)
	rec := 0
	for range r.Count() {
		rec += int(r.Uint())
		if r.Err() != nil || rec < 0 || rec >= lz.n {
			return nil, errSnapshot
		}
		fn(rec)
	}
	return r, r.Err()
}

// eachGroup calls fn with each group of idle jobs and a reader of its
// jobs (next), which fn reads as far as it needs.
func (lz *lazyJobs) eachGroup(fn func(k groupKey, next func() (idleJob, bool))) error {
	r, err := lz.others(func(int) {})
	if err != nil {
		return err
	}
	for range r.Count() {
		k := groupKey{rank: int(r.Uint()), offPeak: r.Bool(), moved: r.Bool(), owner: r.Str(), project: r.Str()}
		g := table.NewDec(r.Str())
		if r.Err() != nil {
			return errSnapshot
		}
		fn(k, func() (idleJob, bool) {
			if g.Err() != nil || g.End() == nil { // read to its end
				return idleJob{}, false
			}
			x := idleJob{rec: int(g.Uint()), order: g.Int(), slots: int(g.Uint())}
			if g.Err() != nil || x.rec < 0 || x.rec >= lz.n {
				g.Fail()
				return idleJob{}, false
			}
			return x, true
		})
		if g.Err() != nil {
			return errSnapshot
		}
	}
	runtime.KeepAlive(lz)
	return r.End()
}

// idleJob is a job of a group: an idle one.
type idleJob struct {
	rec   int
	order int64
	slots int
}

// decodeAll decodes every job into s, but those s.Jobs has already (taken
// out one by one, and newer). A record that is not one whole job, or ids
// out of order (a job twice), fail it.
func (lz *lazyJobs) decodeAll(s *State) error {
	if lz.mapped { // the jobs outlive the mapping
		c := lazyJobs{n: lz.n, offs: strings.Clone(lz.offs), recs: strings.Clone(lz.recs)}
		runtime.KeepAlive(lz)
		lz = &c
	}
	n := lz.n
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
