package eventlog

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spoolhq/spool/internal/durable"
)

// One clone's files copied to another machine make two clones that write
// as one writer, and its file forks: after the lines both copies share,
// each has lines of its own, and neither copy can take the other's (a
// chained file is never unioned). One of them must become a writer of its
// own. Rehome does that for this clone: a new writer id; the events it
// wrote after the shared lines written again, in order, as the new
// writer's (new ids, the same type, subject, data, actor and time, signed
// anew); and its copy of the old writer's file cut back to the shared
// lines, from where it takes the other copy's lines as they arrive.
//
// It is a journal, so that a crash midway leaves neither the events twice
// nor a file that forks again: the new writer's file and what to cut are
// written first (rehome.json), then carried out, and any later session
// finishes what is left before it reads a tail.

// Rehomed is what Rehome did.
type Rehomed struct {
	From   string `json:"from"`   // the old writer id
	To     string `json:"to"`     // this clone's writer id now
	Moved  int    `json:"moved"`  // events written again as the new writer's
	Backup string `json:"backup"` // the old writer's file as it was
}

// rehomeJournal is what is left to do of a Rehome.
type rehomeJournal struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Keep  int64  `json:"keep"`  // the old file's shared lines, in bytes
	Lines string `json:"lines"` // the new writer's file
}

func (l *Log) journalPath() string { return filepath.Join(l.opt.PrivateDir, "rehome.json") }

// Rehome gives this clone a new writer id, keeping the first keep bytes
// (whole lines) of its own file as the old writer's and writing the events
// after them again as the new writer's (see above). It refuses a keep that
// is not the end of a line of the file.
func (s *Session) Rehome(keep int64, now time.Time) (Rehomed, error) {
	old := s.path()
	b, err := os.ReadFile(old)
	if err != nil {
		return Rehomed{}, err
	}
	b = Whole(b)
	if keep < 0 || keep >= int64(len(b)) || keep > 0 && b[keep-1] != '\n' {
		return Rehomed{}, fmt.Errorf("%w: %d bytes of %s are not its first whole lines with lines after them", ErrCorrupt, keep, old)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Rehomed{}, err
	}
	to := hex.EncodeToString(raw[:])
	res := Rehomed{From: s.writer, To: to}
	backups := filepath.Join(s.log.opt.PrivateDir, "repair", strconv.FormatInt(now.UnixNano(), 10))
	if err := os.MkdirAll(backups, 0o755); err != nil {
		return res, err
	}
	res.Backup = filepath.Join(backups, filepath.Base(old))
	if err := durable.WriteFile(res.Backup, b, 0o644); err != nil {
		return res, fmt.Errorf("back up %s: %w", old, err)
	}
	var lines []byte
	prev, lc := "", s.lc
	for i, raw := range bytes.SplitAfter(b[keep:], newline) {
		if len(raw) == 0 {
			continue
		}
		e, err := Decode(raw)
		if err != nil {
			return res, fmt.Errorf("%s: %w", old, err)
		}
		lc++
		n := &Event{V: Version, Writer: to, Seq: uint64(i + 1), Prev: prev, LC: lc, At: e.At, Actor: e.Actor,
			Type: e.Type, Subject: e.Subject, Idem: e.Idem, Data: e.Data, More: e.More}
		sum, err := n.ContentHash()
		if err != nil {
			return res, err
		}
		n.ID = idOf(sum[:])
		if s.log.opt.Signer != nil {
			if n.Sig, err = s.log.opt.Signer.SignEvent(n, sum); err != nil {
				return res, err
			}
		}
		line, err := n.Encode()
		if err != nil {
			return res, err
		}
		lines, prev = append(lines, line...), n.ID
		res.Moved++
	}
	j, err := json.Marshal(rehomeJournal{From: s.writer, To: to, Keep: keep, Lines: string(lines)})
	if err != nil {
		return res, err
	}
	if err := durable.WriteFile(s.log.journalPath(), j, 0o644); err != nil {
		return res, err
	}
	if err := s.log.finishRehome(); err != nil {
		return res, err
	}
	s.log.warnText(fmt.Sprintf("this clone now writes as writer %s: the %d events it wrote after line %d of writer %s's file, which another copy of this clone "+
		"wrote too, are written again as %s's (the file as it was: %s)", to, res.Moved, bytes.Count(b[:keep], newline), res.From, to, res.Backup))
	return res, s.Reload()
}

// finishRehome carries out what a Rehome's journal says, once more if it
// was done before: every step leaves the files as the journal wants them.
func (l *Log) finishRehome() error {
	b, err := os.ReadFile(l.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var j rehomeJournal
	if err := json.Unmarshal(b, &j); err != nil || !ValidWriter(j.From) || !ValidWriter(j.To) {
		return fmt.Errorf("%w: %s cannot be read (%v): move it aside to go on", ErrCorrupt, l.journalPath(), err)
	}
	if err := os.MkdirAll(l.opt.Dir, 0o755); err != nil {
		return err
	}
	to := filepath.Join(l.opt.Dir, j.To+Ext)
	if have, err := os.ReadFile(to); err != nil || !bytes.HasPrefix(have, []byte(j.Lines)) {
		if err := durable.WriteFile(to, []byte(j.Lines), 0o644); err != nil {
			return err
		}
	}
	if err := durable.WriteFile(filepath.Join(l.opt.PrivateDir, "writer"), []byte(j.To+"\n"), 0o644); err != nil {
		return err
	}
	from := filepath.Join(l.opt.Dir, j.From+Ext)
	if st, err := os.Stat(from); err == nil && st.Size() > j.Keep {
		f, err := os.OpenFile(from, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Truncate(j.Keep)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return os.Remove(l.journalPath())
}
