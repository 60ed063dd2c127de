// Package beads is the edge to beads (bd) and beads_rust (br) as a source of
// ready work: spool runs them with an argv (never a shell string) on the
// agent's behalf (agents propose, spool executes: an agent never runs bd
// itself) and parses their JSON. It knows nothing of spool's queue: the work
// queue's service maps issues onto candidates and decides what to tell bd.
package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/tidwall/gjson"
)

// Source is bd or br, run in a worktree.
type Source struct {
	Kind string // bd or br
	Bin  string // the binary; empty means Kind found on PATH
	Dir  string // where it runs: the worktree
}

var (
	// ErrSourceFailed is a bd/br command that failed.
	ErrSourceFailed = errors.New("work source failed")
	// ErrSourceParse is bd/br output that is not the expected JSON.
	ErrSourceParse = errors.New("work source output is not valid")

	CodeSourceFailed     = fault.Register(fault.Environment, "source_failed")
	CodeSourceParseError = fault.Register(fault.Environment, "source_parse_error")
)

// Issue is a bead as bd ready --json shows it (the fields spool uses).
type Issue struct {
	ID          string
	Title       string
	Description string
	Priority    int // 0 (most urgent) to 4; 2 when bd gives none
	IssueType   string
	Labels      []string
	CreatedAt   time.Time
	ExternalRef string
	Raw         string // the issue's JSON as bd/br printed it
	Status      string // as bd shows it: open, in_progress, closed, …
}

// MaxPriority is beads' least urgent priority.
const MaxPriority = 4

func (b Source) bin() (string, error) {
	if b.Bin != "" {
		return b.Bin, nil
	}
	path, err := exec.LookPath(b.Kind)
	if err != nil {
		return "", fault.New(CodeSourceFailed, ErrSourceFailed,
			fmt.Sprintf("%s not found on PATH; install it or set workqueue.source_bin", b.Kind), "source", b.Kind)
	}
	return path, nil
}

// Run runs one bd/br command and returns its stdout.
func (b Source) Run(ctx context.Context, args ...string) ([]byte, error) {
	bin, err := b.bin()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	// In its own process group, ended with spool (see internal/proc).
	err = proc.Run(ctx, proc.Cmd{Argv: append([]string{bin}, args...), Dir: b.Dir, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fault.New(CodeSourceFailed, fmt.Errorf("%w: %v", ErrSourceFailed, err),
			fmt.Sprintf("%s %s failed: %s", b.Kind, strings.Join(args, " "), msg),
			"source", b.Kind, "argv", append([]string{bin}, args...), "stderr", stderr.String())
	}
	return stdout.Bytes(), nil
}

// Ready runs `<bin> ready --json --limit 0 [--label L]...` and parses it.
func (b Source) Ready(ctx context.Context, labels []string) ([]Issue, error) {
	args := []string{"ready", "--json", "--limit", "0"}
	for _, l := range labels {
		args = append(args, "--label="+l) // one word: a label never reads as a flag
	}
	out, err := b.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	cands, err := ParseReady(out)
	if err != nil {
		return nil, b.parseError("ready --json", out, err)
	}
	return cands, nil
}

// Close, LabelAdd, LabelRemove and SetPriority mirror done, block, unblock
// and demotion in the source. Flags come first and ids after "--", so an
// id such as --force is an id, never an option.
func (b Source) Close(ctx context.Context, id, reason string) error {
	_, err := b.Run(ctx, "close", "--reason="+reason, "--", id)
	return err
}

func (b Source) LabelAdd(ctx context.Context, id, label string) error {
	_, err := b.Run(ctx, "label", "add", "--", id, label)
	return err
}

func (b Source) LabelRemove(ctx context.Context, id, label string) error {
	_, err := b.Run(ctx, "label", "remove", "--", id, label)
	return err
}

func (b Source) SetPriority(ctx context.Context, id string, priority int) error {
	_, err := b.Run(ctx, "update", "--priority="+strconv.Itoa(priority), "--", id)
	return err
}

// Comment adds a comment to a bead: `<bin> comments add -- ID TEXT`.
func (b Source) Comment(ctx context.Context, id, text string) error {
	_, err := b.Run(ctx, "comments", "add", "--", id, text)
	return err
}

// Labels runs `<bin> label list --json -- ID`: the bead's labels.
func (b Source) Labels(ctx context.Context, id string) ([]string, error) {
	out, err := b.Run(ctx, "label", "list", "--json", "--", id)
	if err != nil {
		return nil, err
	}
	var labels []string
	if err := json.Unmarshal(out, &labels); err != nil {
		return nil, b.parseError("label list --json", out, err)
	}
	return labels, nil
}

// Reopen opens a closed bead again: `<bin> reopen -- ID`.
func (b Source) Reopen(ctx context.Context, id string) error {
	_, err := b.Run(ctx, "reopen", "--", id)
	return err
}

// CreateEpic runs `<bin> create --type=epic --json --title=T
// --description=D --external-ref=REF` and returns the new epic's id. REF
// lets FindByExternalRef find it again after a crash.
func (b Source) CreateEpic(ctx context.Context, title, description, ref string) (string, error) {
	out, err := b.Run(ctx, "create", "--type=epic", "--json", "--title="+title, "--description="+description, "--external-ref="+ref)
	if err != nil {
		return "", err
	}
	issues, err := ParseReady(out) // one issue, or a list of one
	if err != nil || len(issues) != 1 {
		if err == nil {
			err = fmt.Errorf("want one issue, got %d", len(issues))
		}
		return "", b.parseError("create --json", out, err)
	}
	return issues[0].ID, nil
}

// FindByExternalRef returns the id of the issue whose external_ref is ref,
// if there is one: `<bin> list --json --all --limit 0`.
func (b Source) FindByExternalRef(ctx context.Context, ref string) (string, bool, error) {
	i, found, err := b.find(ctx, func(i Issue) bool { return i.ExternalRef == ref })
	return i.ID, found, err
}

// Status returns the status of the issue id, and whether there is one:
// `<bin> list --json --all --limit 0`.
func (b Source) Status(ctx context.Context, id string) (string, bool, error) {
	i, found, err := b.find(ctx, func(i Issue) bool { return i.ID == id })
	return i.Status, found, err
}

// find returns the first issue, closed ones included, that match takes.
func (b Source) find(ctx context.Context, match func(Issue) bool) (Issue, bool, error) {
	out, err := b.Run(ctx, "list", "--json", "--all", "--limit", "0")
	if err != nil {
		return Issue{}, false, err
	}
	issues, err := ParseReady(out)
	if err != nil {
		return Issue{}, false, b.parseError("list --json", out, err)
	}
	for _, i := range issues {
		if match(i) {
			return i, true, nil
		}
	}
	return Issue{}, false, nil
}

// ReadyUnder reports whether any descendant of parent is ready:
// `<bin> ready --json --limit 0 --parent=ID`.
func (b Source) ReadyUnder(ctx context.Context, parent string) (bool, error) {
	out, err := b.Run(ctx, "ready", "--json", "--limit", "0", "--parent="+parent)
	if err != nil {
		return false, err
	}
	issues, err := ParseReady(out)
	if err != nil {
		return false, b.parseError("ready --json", out, err)
	}
	return len(issues) > 0, nil
}

func (b Source) parseError(what string, out []byte, err error) error {
	const limit = 4096
	if len(out) > limit {
		out = out[:limit]
	}
	return fault.New(CodeSourceParseError, fmt.Errorf("%w: %v", ErrSourceParse, err),
		fmt.Sprintf("%s %s: %v", b.Kind, what, err), "source", b.Kind, "output", string(out))
}

// ParseReady reads bd/br JSON issues: a bare array of issues, an object
// wrapping one (beads' {"schema_version":1,"items":[...]}), or one issue
// (bd create --json). Unknown fields are ignored; empty output is none.
func ParseReady(out []byte) ([]Issue, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if !gjson.ValidBytes(trimmed) {
		return nil, errors.New("not valid JSON")
	}
	root := gjson.ParseBytes(trimmed)
	list := root
	if root.IsObject() {
		if id := root.Get("id"); id.Exists() { // one issue
			c, err := issueOf(root)
			if err != nil {
				return nil, err
			}
			return []Issue{c}, nil
		}
		list = gjson.Result{}
		for _, key := range []string{"items", "issues", "data", "ready"} {
			if v := root.Get(key); v.IsArray() {
				list = v
				break
			}
		}
		if !list.IsArray() {
			return nil, errors.New(`an object without an "items" array`)
		}
	}
	if !list.IsArray() {
		return nil, errors.New("neither an array nor an object")
	}
	var cands []Issue
	var perr error
	list.ForEach(func(_, v gjson.Result) bool {
		c, err := issueOf(v)
		if err != nil {
			perr = fmt.Errorf("item %d: %w", len(cands), err)
			return false
		}
		cands = append(cands, c)
		return true
	})
	return cands, perr
}

func issueOf(v gjson.Result) (Issue, error) {
	if !v.IsObject() {
		return Issue{}, errors.New("not an object")
	}
	id := v.Get("id")
	if id.Type != gjson.String || id.Str == "" {
		return Issue{}, errors.New("no string id")
	}
	c := Issue{ID: id.Str, Title: v.Get("title").String(), Description: v.Get("description").String(),
		IssueType: v.Get("issue_type").String(), Priority: 2, ExternalRef: v.Get("external_ref").String(), Raw: v.Raw,
		Status: v.Get("status").String()}
	if p := v.Get("priority"); p.Exists() {
		if p.Type != gjson.Number || p.Int() < 0 || p.Int() > MaxPriority {
			return Issue{}, fmt.Errorf("%s: priority %s is not 0-4", c.ID, p.Raw)
		}
		c.Priority = int(p.Int())
	}
	for _, l := range v.Get("labels").Array() {
		if l.Type == gjson.String {
			c.Labels = append(c.Labels, l.Str)
		}
	}
	if at := v.Get("created_at"); at.Type == gjson.String {
		t, err := time.Parse(time.RFC3339Nano, at.Str)
		if err != nil {
			return Issue{}, fmt.Errorf("%s: created_at %q is not RFC 3339", c.ID, at.Str)
		}
		c.CreatedAt = t.UTC()
	}
	return c, nil
}
