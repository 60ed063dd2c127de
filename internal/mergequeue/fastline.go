package mergequeue

import (
	"strconv"
	"time"
)

// fastEntry reads one entry line as encode writes it: a flat object of
// strings without escapes, integers, one array of strings and the flat
// last_step object. It gives up (false) on anything else, and the caller
// then takes gjson's general path; it never accepts what gjson would read
// differently (FuzzEntryLine checks that).
func fastEntry(b []byte, e *Entry) bool {
	p := &scanner{b: b}
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "entry_id":
			n, ok := p.int()
			e.ID = int64(n)
			return ok
		case "position":
			return p.intTo(&e.Position)
		case "priority":
			return p.intTo(&e.Priority)
		case "attempts":
			return p.intTo(&e.Attempts)
		case "steps":
			return p.intTo(&e.Steps)
		case "status":
			s, ok := p.str()
			e.Status = Status(intern(s))
			return ok
		case "workspace_state":
			s, ok := p.str()
			e.WorkspaceState = WorkspaceState(intern(s))
			return ok
		case "workspace":
			return p.strTo(&e.Workspace)
		case "workspace_id":
			return p.strTo(&e.WorkspaceID)
		case "legacy_writer":
			return p.strTo(&e.LegacyWriter)
		case "worktree":
			return p.strTo(&e.Worktree)
		case "branch":
			return p.strTo(&e.Branch)
		case "change_id":
			return p.strTo(&e.ChangeID)
		case "change_id_source":
			s, ok := p.str()
			e.ChangeIDSource = intern(s)
			return ok
		case "dedupe_key":
			return p.strTo(&e.DedupeKey)
		case "entry_ref":
			return p.strTo(&e.Ref)
		case "head_sha":
			return p.strTo(&e.HeadSHA)
		case "tested_sha":
			return p.strTo(&e.TestedSHA)
		case "tested_against_sha":
			return p.strTo(&e.TestedAgainstSHA)
		case "target_from_sha":
			return p.strTo(&e.TargetFromSHA)
		case "target":
			return p.strTo(&e.Target)
		case "bead_id":
			return p.strTo(&e.BeadID)
		case "owner":
			return p.strTo(&e.Owner)
		case "runner":
			return p.strTo(&e.Runner)
		case "scratch_dir":
			return p.strTo(&e.ScratchDir)
		case "run_dir":
			return p.strTo(&e.RunDir)
		case "last_error":
			return p.strTo(&e.LastError)
		case "waiting":
			return p.strTo(&e.Waiting)
		case "lease_until":
			t, ok := p.time()
			e.LeaseUntil = &t
			return ok
		case "added_at":
			t, ok := p.time()
			e.AddedAt = t
			return ok
		case "updated_at":
			t, ok := p.time()
			e.UpdatedAt = t
			return ok
		case "conflict_paths":
			return p.strings(&e.ConflictPaths)
		case "proc":
			e.Proc = &ProcRecord{}
			return p.procRecord(e.Proc)
		case "holder":
			e.Holder = &ProcRecord{}
			return p.procRecord(e.Holder)
		case "conflicts":
			return p.resolutions(&e.Conflicts)
		case "last_step":
			st := &e.LastStep
			return p.object(func(key []byte) bool {
				switch string(key) {
				case "n":
					return p.intTo(&st.N)
				case "actor":
					return p.strTo(&st.Actor)
				case "type":
					s, ok := p.str()
					st.Type = intern(s)
					return ok
				case "from":
					s, ok := p.str()
					st.From = Status(intern(s))
					return ok
				case "to":
					s, ok := p.str()
					st.To = Status(intern(s))
					return ok
				}
				return false
			})
		}
		return false // a key encode does not write: let the general path decide
	}) && p.i == len(b)
}

type scanner struct {
	b []byte
	i int
}

// object reads {"key":value,...}, calling field for each key with the
// scanner on the value; keys are plain ASCII without escapes.
func (p *scanner) object(field func(key []byte) bool) bool {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	p.i++
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		key, ok := p.raw()
		if !ok || p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		if !field(key) {
			return false
		}
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// raw reads a string without escapes or control characters and returns its bytes.
func (p *scanner) raw() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false // escapes and non-ASCII: the general path
		}
	}
	return nil, false
}

func (p *scanner) str() (string, bool) {
	b, ok := p.raw()
	return string(b), ok
}

func (p *scanner) strTo(dst *string) bool {
	s, ok := p.str()
	*dst = s
	return ok
}

func (p *scanner) int() (int, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.i-digits > 1 && p.b[digits] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(string(p.b[start:p.i]))
	return n, err == nil
}

func (p *scanner) intTo(dst *int) bool {
	n, ok := p.int()
	*dst = n
	return ok
}

func (p *scanner) time() (time.Time, bool) {
	b, ok := p.raw()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t.UTC(), err == nil
}

func (p *scanner) strings(dst *[]string) bool {
	var out []string
	if !p.array(func() bool {
		s, ok := p.str()
		out = append(out, s)
		return ok
	}) {
		return false
	}
	*dst = out
	return true
}

// resolutions reads [{"event":…,"to":…,"reason":…},…] as encode writes it.
func (p *scanner) resolutions(dst *[]Resolution) bool {
	var out []Resolution
	if !p.array(func() bool {
		var r Resolution
		ok := p.object(func(key []byte) bool {
			switch string(key) {
			case "event":
				return p.strTo(&r.Event)
			case "to":
				s, ok := p.str()
				r.To = Status(intern(s))
				return ok
			case "reason":
				return p.strTo(&r.Reason)
			}
			return false
		})
		out = append(out, r)
		return ok
	}) {
		return false
	}
	*dst = out
	return true
}

// array reads a non-empty [item,…], item reading one element.
func (p *scanner) array(item func() bool) bool {
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return false
	}
	p.i++
	for {
		if !item() || p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ']':
			p.i++
			return true
		case ',':
			p.i++
		default:
			return false
		}
	}
}

// intern returns the constant for the few strings every entry repeats.
func intern(s string) string {
	for _, c := range internTable {
		if c == s {
			return c
		}
	}
	return s
}

var internTable = func() []string {
	t := []string{string(WorkspaceCreated), string(WorkspaceWorking), string(WorkspaceReady), string(WorkspaceMerged),
		string(WorkspaceConflict), string(WorkspaceAbandoned), SourceJJ, SourceTrailer, SourceGenerated,
		EvSubmitted, EvResubmitted, EvUpdated, EvClaimed, EvTransitioned, EvRecovered, EvRetried, EvCancelled}
	for _, s := range Statuses {
		t = append(t, string(s))
	}
	return t
}()

// procRecord reads a ProcRecord object as encode writes it (procField).
func (p *scanner) procRecord(r *ProcRecord) bool {
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "pid":
			return p.intTo(&r.PID)
		case "pgid":
			return p.intTo(&r.PGID)
		case "start":
			n, ok := p.int()
			r.Start = uint64(n)
			return ok && n >= 0
		case "boot":
			return p.strTo(&r.Boot)
		case "ns":
			return p.strTo(&r.NS)
		}
		return false
	})
}
