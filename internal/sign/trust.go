package sign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"golang.org/x/crypto/ssh"
)

// configFile is where the admins lists are.
const configFile = ".spool/config.json"

// trustState is who is trusted as of one commit (or the work tree): the
// allowed signers file and every admins list of the configuration.
type trustState struct {
	signers string // blob id of allowed_signers, "" when there is none
	config  string // blob id of config.json, "" when there is none
}

// trust judges commits that change a trust state. Parsed files are kept by
// blob id: most commits share them.
type trust struct {
	h       *git.History
	states  map[string]trustState
	signers map[string]*AllowedSigners
	errs    map[string]error
	admins  map[string]admins
	content map[string][]byte // blobs of the work tree, which git does not have
}

// admins are the admins lists of one config.json: "admins",
// "scheduler.admins" and any other key ending in .admins.
type admins struct {
	canonical string // to compare
	names     []string
	exempt    string // sign.exempt as written: also a trust change
}

func newTrust(h *git.History) *trust {
	return &trust{h: h, states: map[string]trustState{}, signers: map[string]*AllowedSigners{},
		errs: map[string]error{}, admins: map[string]admins{}, content: map[string][]byte{}}
}

func (t *trust) state(commit string) (trustState, error) {
	if s, ok := t.states[commit]; ok {
		return s, nil
	}
	ids, err := t.h.BlobsAt(commit, AllowedSignersFile, configFile)
	if err != nil {
		return trustState{}, err
	}
	s := trustState{signers: ids[0], config: ids[1]}
	t.states[commit] = s
	return s, nil
}

func (t *trust) blob(id string) ([]byte, error) {
	if b, ok := t.content[id]; ok {
		return b, nil
	}
	return t.h.ReadBlob(id)
}

// same reports whether two states trust the same: the same allowed signers
// and the same admins (config.json may differ in other keys).
func (t *trust) same(a, b trustState) (bool, error) {
	if a.signers != b.signers {
		return false, nil
	}
	if a.config == b.config {
		return true, nil
	}
	x, err := t.adminsOf(a)
	if err != nil {
		return false, err
	}
	y, err := t.adminsOf(b)
	return err == nil && x.canonical == y.canonical && x.exempt == y.exempt, err
}

func (t *trust) adminsOf(s trustState) (admins, error) {
	if a, ok := t.admins[s.config]; ok {
		return a, nil
	}
	var a admins
	if s.config != "" {
		b, err := t.blob(s.config)
		if err != nil {
			return a, err
		}
		a = parseAdmins(b)
	}
	t.admins[s.config] = a
	return a, nil
}

// parseAdmins reads the admins lists of a config.json. A file that is not a
// JSON object names no admins, and its own text is what is compared.
func parseAdmins(b []byte) admins {
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return admins{canonical: "unreadable:" + git.BlobID(b)}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		if k == "admins" || strings.HasSuffix(k, ".admins") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var a admins
	a.exempt = string(raw["sign.exempt"])
	seen := map[string]bool{}
	for _, k := range keys {
		var names []string
		if json.Unmarshal(raw[k], &names) != nil {
			a.canonical += k + "=unreadable:" + string(raw[k]) + "\n"
			continue
		}
		list, _ := json.Marshal(names)
		a.canonical += k + "=" + string(list) + "\n"
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				a.names = append(a.names, n)
			}
		}
	}
	return a
}

func (t *trust) allowedOf(s trustState) (*AllowedSigners, error) {
	if a, ok := t.signers[s.signers]; ok {
		return a, t.errs[s.signers]
	}
	b, err := t.blob(s.signers)
	if err != nil {
		return nil, err
	}
	a, perr := ParseAllowedSigners(AllowedSignersFile, b)
	t.signers[s.signers], t.errs[s.signers] = a, perr
	return a, perr
}

// signedByAdmin says why c's signature is not that of an admin of the
// state before (nil when it is): an SSH signature in namespace git by a
// key that state's allowed signers lists for one of its admins, valid when
// c was committed. With no admins at all, any key it lists will do.
func (t *trust) signedByAdmin(c *git.Commit, before trustState) error {
	if c.Signature == "" {
		return errors.New("the commit is not signed")
	}
	blob, err := Unarmor(c.Signature)
	if err != nil {
		return errors.New("the commit's signature is not an SSH signature (spool checks SSH signatures only)")
	}
	key, err := Verify(blob, NamespaceGit, c.Payload)
	if err != nil {
		return fmt.Errorf("the commit's signature: %v", err)
	}
	allowed, err := t.allowedOf(before)
	if err != nil {
		return fmt.Errorf("the allowed signers before it cannot be read: %v", err)
	}
	adm, err := t.adminsOf(before)
	if err != nil {
		return err
	}
	if len(adm.names) == 0 {
		if allowed.Lists(NamespaceGit, key, c.Committed) {
			return nil
		}
		return fmt.Errorf("signed by key %s, which the allowed signers before it do not list (no admins are set, so any listed key would do)", ssh.FingerprintSHA256(key))
	}
	for _, a := range adm.names {
		if allowed.Check(a, NamespaceGit, key, c.Committed) == nil {
			return nil
		}
	}
	return fmt.Errorf("signed by key %s, which the allowed signers before it do not list for an admin (%s) in namespace git",
		ssh.FingerprintSHA256(key), strings.Join(adm.names, ", "))
}

// carried reports whether merge c's state came whole from another of its
// parents than parent i, and parent i's state is what every merge base of
// the two had: the change was made on that side, where its own commits are
// checked.
func (t *trust) carried(c *git.Commit, i int, after trustState) (bool, error) {
	before, err := t.state(c.Parents[i])
	if err != nil {
		return false, err
	}
	for j, q := range c.Parents {
		if j == i {
			continue
		}
		qs, err := t.state(q)
		if err != nil {
			return false, err
		}
		same, err := t.same(qs, after)
		if err != nil {
			return false, err
		}
		if !same {
			continue
		}
		bases, err := t.h.MergeBases(c.Parents[i], q)
		if err != nil {
			return false, err
		}
		held := len(bases) > 0
		for _, b := range bases {
			bs, err := t.state(b)
			if err != nil {
				return false, err
			}
			same, err := t.same(bs, before)
			if err != nil {
				return false, err
			}
			held = held && same
		}
		if held {
			return true, nil
		}
	}
	return false, nil
}

// checkHistory checks every commit reachable from tips that changes the
// allowed signers or an admins list from what one of its parents had: it
// must be signed by an admin of that parent (signedByAdmin), or be a merge
// that carries a change made on the other side (carried). A parent with no
// allowed signers file trusts nobody yet: the commit that first adds one is
// trusted on first use, as is the history before it.
func (t *trust) checkHistory(tips []string, rep *Report) error {
	return t.h.Walk(tips, func(c *git.Commit) error {
		after, err := t.state(c.Hash)
		if err != nil {
			return err
		}
		counted := false
		for i, p := range c.Parents {
			before, err := t.state(p)
			if err != nil {
				return err
			}
			if before.signers == "" {
				continue
			}
			same, err := t.same(before, after)
			if err != nil {
				return err
			}
			if same {
				continue
			}
			if !counted {
				rep.Commits++
				counted = true
			}
			why := t.signedByAdmin(c, before)
			if why == nil {
				continue
			}
			carried, err := t.carried(c, i, after)
			if err != nil {
				return err
			}
			if carried {
				continue
			}
			rep.Problems = append(rep.Problems, Problem{Code: CodeUnsignedTrustChange.Name, Commit: c.Hash,
				Message: fmt.Sprintf("changes %s from its parent %s: %v", t.whatChanged(before, after), short(p), why)})
		}
		return nil
	})
}

func (t *trust) whatChanged(before, after trustState) string {
	var what []string
	if before.signers != after.signers {
		what = append(what, AllowedSignersFile)
	}
	if before.config != after.config {
		a, _ := t.adminsOf(before)
		b, _ := t.adminsOf(after)
		if a.canonical != b.canonical {
			what = append(what, "the admins in "+configFile)
		}
		if a.exempt != b.exempt {
			what = append(what, "sign.exempt in "+configFile)
		}
	}
	return strings.Join(what, " and ")
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// root returns the commit that first brought the allowed signers file into
// the unbroken run of head's first parents that have one ("" when head has
// none): the point trusted on first use.
func (t *trust) root(head string) (string, error) {
	root := ""
	for id := head; id != ""; {
		s, err := t.state(id)
		if err != nil || s.signers == "" {
			return root, err
		}
		root = id
		c, err := t.h.Commit(id)
		if err != nil {
			return "", err
		}
		id = ""
		if len(c.Parents) > 0 {
			id = c.Parents[0]
		}
	}
	return root, nil
}

// Exemption is the events from before signing began, which verify does
// not ask for a signature: those a writer had appended up to the seq
// sign.exempt names for it in the configuration of the commit that first
// brought allowed_signers (spool sign start records it), and, in a
// repository of the old layout, those committed in .spool/events then.
type Exemption struct {
	ids  map[string]bool
	upTo map[string]uint64 // writer → last exempt seq
}

// Has says whether e is from before signing.
func (x Exemption) Has(e *eventlog.Event) bool {
	return x.ids[e.ID] || e.Seq <= x.upTo[e.Writer]
}

// Exempt reads the exemption that commit (the trust root) records.
func Exempt(h *git.History, commit string) (Exemption, error) {
	x := Exemption{ids: map[string]bool{}, upTo: map[string]uint64{}}
	files, err := h.FilesUnder(commit, ".spool/events")
	if err != nil {
		return x, err
	}
	for name, b := range files {
		if !strings.HasSuffix(name, eventlog.Ext) {
			continue
		}
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			if e, err := eventlog.Decode(line); err == nil {
				x.ids[e.ID] = true
			}
		}
	}
	cfg, err := h.FilesUnder(commit, ".spool")
	if err != nil {
		return x, err
	}
	var raw struct {
		Exempt []string `json:"sign.exempt"`
	}
	json.Unmarshal(cfg["config.json"], &raw) // a config that does not read exempts nothing
	for _, w := range raw.Exempt {
		if writer, seq, err := ParseExempt(w); err == nil {
			x.upTo[writer] = seq
		}
	}
	return x, nil
}

// ParseExempt reads one entry of sign.exempt: "<writer>:<seq>".
func ParseExempt(s string) (writer string, seq uint64, err error) {
	writer, n, ok := strings.Cut(s, ":")
	if ok && eventlog.ValidWriter(writer) {
		if seq, err = strconv.ParseUint(n, 10, 64); err == nil {
			return writer, seq, nil
		}
	}
	return "", 0, fmt.Errorf("%q is not <writer>:<seq>", s)
}

// checkWorkTree reports an uncommitted change to the trust files: the work
// tree's allowed signers or admins differ from head's, which has a file.
func (t *trust) checkWorkTree(head, root string, rep *Report) error {
	before, err := t.state(head)
	if err != nil || before.signers == "" {
		return err
	}
	var now trustState
	for _, f := range []struct {
		path string
		id   *string
	}{{AllowedSignersFile, &now.signers}, {configFile, &now.config}} {
		b, err := os.ReadFile(filepath.Join(root, f.path))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		*f.id = git.BlobID(b)
		t.content[*f.id] = b
	}
	same, err := t.same(before, now)
	if err != nil || same {
		return err
	}
	rep.Problems = append(rep.Problems, Problem{Code: CodeUnsignedTrustChange.Name,
		Message: fmt.Sprintf("the work tree changes %s from HEAD (%s) without a commit: commit it, signed by an admin", t.whatChanged(before, now), short(head))})
	return nil
}

// historyError explains a history the clone does not have whole.
func historyError(err error) error {
	if errors.Is(err, git.ErrShallow) {
		return fault.New(CodeHistoryIncomplete, err,
			fmt.Sprintf("%v: verify --signatures reads every commit that changed %s or the admins; fetch the whole history (git fetch --unshallow; in CI, a full clone)", err, AllowedSignersFile))
	}
	return err
}
