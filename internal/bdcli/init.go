package bdcli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
	"github.com/tidwall/gjson"
)

// bd init: spool init, with bd's prefix as ids.prefix. bd initializes any
// directory; spool keeps its log in .git/spool, so a directory that is in
// no git repository gets one (git init), as bd would have made its .beads
// there. It is idempotent, where bd refuses a second init: spool init is.
// A project that has bd's .beads/issues.jsonl gets its issues, as bd init
// imports them, when this init is what sets spool up there: in a clone of
// a project already on spool, they come with its log (spool sync), and a
// left-over export imported before that would set them back.

type bdInitCmd struct {
	Prefix    string `short:"p" help:"Id prefix for new issues (default: that of .beads/issues.jsonl's issues, else the directory's name)."`
	FromJSONL bool   `name:"from-jsonl" help:"Import .beads/issues.jsonl into a tracker with no issues (done anyway when this init sets spool up)."`
	// Nothing to skip or force: spool init installs no hooks or merge
	// driver, and a second init changes only what differs.
	SkipHooks       bool `name:"skip-hooks" hidden:""`
	SkipMergeDriver bool `name:"skip-merge-driver" hidden:""`
	Force           bool `hidden:""`
	// bd's storage, its sync branch and its setup wizards: refused in Run.
	Branch       string `short:"b" hidden:""`
	Backend      string `hidden:""`
	Contributor  bool   `hidden:""`
	Team         bool   `hidden:""`
	Stealth      bool   `hidden:""`
	SetupExclude bool   `name:"setup-exclude" hidden:""`
}

// refused is the first of bd's init flags that spool cannot honour.
func (c *bdInitCmd) refused() error {
	switch {
	case c.Backend != "" && c.Backend != "spool":
		return notSupported("init --backend "+c.Backend, "spool keeps the issues as events in its log (.git/spool), in no sqlite or dolt database; drop --backend")
	case c.Branch != "":
		return notSupported("init --branch", "spool commits nothing to a branch: spool sync shares its log on a ref of its own; drop --branch")
	case c.Contributor || c.Team:
		return notSupported("init --contributor and --team", "they are bd's interactive setup wizards; run bd init, then spool sync and spool hooks install to share the log")
	case c.Stealth || c.SetupExclude:
		return notSupported("init --stealth and --setup-exclude", "spool keeps its log in .git/spool, out of the work tree already; "+
			"to keep .spool/ and .beads/ out of git too, add them to .git/info/exclude")
	}
	return nil
}

// bdInitResult is bd init --json.
type bdInitResult struct {
	Prefix   string   `json:"prefix"`
	Backend  string   `json:"backend"`
	Root     string   `json:"root"`
	Created  []string `json:"created"`
	Imported int      `json:"imported"`
}

func (c *bdInitCmd) Run(b *bdEnv) error {
	if err := c.refused(); err != nil {
		return err
	}
	if b.cli.Readonly {
		return bdUsage("operation blocked: --readonly mode")
	}
	dir, err := filepath.Abs(b.dir())
	if err != nil {
		return err
	}
	var created []string
	if _, err := git.Discover(b.ctx, dir); errors.Is(err, git.ErrNotGitRepo) {
		if _, err := git.Run(b.ctx, dir, "init", "-q"); err != nil {
			return err
		}
		created = append(created, ".git (git init: spool keeps its log in .git/spool)")
	} else if err != nil {
		return err
	}
	r, err := git.Discover(b.ctx, dir)
	if err != nil {
		return err
	}
	fresh := !store.HasSpool(b.ctx, r) // spool is set up here by this init
	init, err := store.Init(b.ctx, dir, b.warn, b.storeOptions()...)
	if err != nil {
		return err
	}
	created = append(created, init.Created...)
	var data []byte
	if fresh || c.FromJSONL {
		jsonl := filepath.Join(r.Root, ".beads", "issues.jsonl")
		if data, err = os.ReadFile(jsonl); err != nil && (c.FromJSONL || !errors.Is(err, os.ErrNotExist)) {
			return bdUsage("reading %s: %v", jsonl, err)
		}
	}
	prefix, changed, err := setPrefix(b, r, c.Prefix, jsonlPrefix(data), fresh)
	if err != nil {
		return err
	} else if changed {
		created = append(created, "ids.prefix "+prefix+" in .spool/config.json")
	}
	imported := 0
	if data != nil {
		if imported, err = c.importIssues(b, data); err != nil {
			if fresh && !c.FromJSONL {
				// spool is set up now, so a plain bd init again would not
				// import: say how to.
				if f, ok := fault.As(err); ok {
					f.Message += " (spool is set up: fix .beads/issues.jsonl and import it with bd init --from-jsonl)"
				}
			}
			return err
		}
		if imported > 0 {
			created = append(created, fmt.Sprintf("%d issues from .beads/issues.jsonl", imported))
		}
	}
	marker, err := beadsMarker(r.Root)
	if err != nil {
		return err
	}
	created = append(created, marker...)
	if b.JSON {
		return cliout.WriteJSON(b.stdout, bdInitResult{Prefix: prefix, Backend: "spool", Root: r.Root, Created: cliout.NonNil(created), Imported: imported})
	}
	if b.cli.Quiet {
		return nil
	}
	events, err := filepath.Rel(r.Root, store.EventsDir(r))
	if err != nil || !filepath.IsLocal(events) {
		events = store.EventsDir(r)
	}
	fmt.Fprintf(b.stdout, "\n✓ bd initialized successfully!\n\n")
	fmt.Fprintf(b.stdout, "  Backend: spool (every change an event in %s)\n", events)
	fmt.Fprintf(b.stdout, "  Configuration: .spool/config.json (commit it)\n")
	fmt.Fprintf(b.stdout, "  Issue prefix: %s\n", prefix)
	fmt.Fprintf(b.stdout, "  Issues will be named: %s-<hash> (e.g., %s-a3f2)\n", prefix, prefix)
	if imported > 0 {
		fmt.Fprintf(b.stdout, "  Imported: %d issues from .beads/issues.jsonl\n", imported)
	}
	if len(created) == 0 {
		fmt.Fprintf(b.stdout, "  Already initialized: nothing changed\n")
	}
	fmt.Fprintf(b.stdout, "\nRun bd quickstart to get started, bd prime for an agent's context.\n\n")
	return nil
}

// importIssues imports bd's JSONL into a tracker that has no issues yet:
// once there are some, they are spool's, and an import would set them back
// as the file has them. It returns how many it recorded.
func (c *bdInitCmd) importIssues(b *bdEnv, data []byte) (int, error) {
	q, err := b.queue(true)
	if err != nil {
		return 0, err
	}
	st, err := q.Read(b.ctx, wqservice.Tracker)
	if err != nil {
		return 0, err
	}
	if st.TaskCount() > 0 {
		if c.FromJSONL {
			return 0, bdUsage("--from-jsonl: the tracker has issues already, which an import would set back as the file has them; run bd import -i .beads/issues.jsonl to do that")
		}
		return 0, nil
	}
	return b.host.ImportFrom(bytes.NewReader(data))
}

// jsonlPrefix is the prefix of the first issue's id in bd's JSONL (what is
// before its last hyphen), "" if there is none.
func jsonlPrefix(data []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(data), []byte("\n"))
	id := gjson.GetBytes(line, "id").Str
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return ""
}

// bdInitPrefix is the prefix bd init would take: --prefix without its
// trailing hyphens, else that of the issues it imports if spool can spell
// it, else the directory's name made into a prefix spool accepts
// (lowercase letters and digits), else spool's default.
func bdInitPrefix(flag, imported, root string) (string, error) {
	if flag == "" && workqueue.ValidPrefix(imported) {
		return imported, nil
	}
	if flag != "" {
		p := strings.TrimRight(flag, "-")
		if !workqueue.ValidPrefix(p) {
			return "", bdUsage("invalid prefix %q: spool's ids.prefix must be 1-16 lowercase letters and digits, starting with a letter", flag)
		}
		return p, nil
	}
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(root)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	p := b.String()
	if len(p) > 16 {
		p = p[:16]
	}
	if !workqueue.ValidPrefix(p) {
		return "sp", nil
	}
	return p, nil
}

// setPrefix records ids.prefix under the log's lock, as spool config set
// does: --prefix, else the prefix set already (bd: flag, then config);
// where this init sets spool up, that of the issues imported, else one
// from the directory's name (in a project already on spool, its prefix
// stays as it is, spool's default included). It reports the prefix and
// whether it changed.
func setPrefix(b *bdEnv, r *git.Repo, flag, imported string, fresh bool) (string, bool, error) {
	st, err := b.openLenient()
	if err != nil {
		return "", false, err
	}
	sess, err := st.Log.Begin(b.ctx)
	if err != nil {
		return "", false, err
	}
	defer sess.Close()
	cfg, err := config.Load(store.ConfigPath(r))
	if err != nil {
		return "", false, err
	}
	v, set, _ := cfg.Value(workqueue.KeyPrefix)
	if (set || !fresh) && flag == "" {
		return workqueue.PrefixFrom(cfg), false, nil
	}
	prefix, err := bdInitPrefix(flag, imported, r.Root)
	if err != nil || set && v == prefix {
		return prefix, false, err
	}
	if err := cfg.Set(workqueue.KeyPrefix, prefix); err != nil {
		return "", false, err
	}
	return prefix, true, cfg.Save()
}

// beadsMarker writes .beads/metadata.json and .beads/.gitignore unless they
// are there: tools find a beads project by its .beads directory, and the
// metadata tells them, and a real bd that reads it (it finds no database
// there and says so), that spool keeps the tasks.
func beadsMarker(root string) ([]string, error) {
	dir := filepath.Join(root, ".beads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []struct{ name, content string }{
		{"metadata.json", beadsMetadata},
		{".gitignore", beadsGitignore},
	}
	var created []string
	for _, f := range files {
		made, err := durable.CreateNew(filepath.Join(dir, f.name), []byte(f.content), 0o644)
		if err != nil {
			return nil, err
		}
		if made {
			created = append(created, filepath.Join(".beads", f.name))
		}
	}
	return created, nil
}

const beadsMetadata = `{
  "database": "",
  "backend": "spool",
  "spool_config": ".spool/config.json"
}
`

const beadsGitignore = `# bd here is spool: the issues are events in spool's log (.git/spool), not
# files in this directory, which only marks the project for beads tools.
*
!.gitignore
!metadata.json
`
