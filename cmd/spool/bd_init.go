package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// bd init: spool init, with bd's prefix as ids.prefix. bd initializes any
// directory; spool keeps its log in .git/spool, so a directory that is in
// no git repository gets one (git init), as bd would have made its .beads
// there. It is idempotent, where bd refuses a second init: spool init is.

type bdInitCmd struct {
	Prefix string `short:"p" help:"Id prefix for new issues (default: the directory's name)."`
	// bd's other init flags set up bd's storage, hooks and wizards: accepted
	// as bd's storage flags are, they change nothing here.
	Branch          string `short:"b" hidden:""`
	Backend         string `hidden:""`
	Contributor     bool   `hidden:""`
	Team            bool   `hidden:""`
	Stealth         bool   `hidden:""`
	SetupExclude    bool   `name:"setup-exclude" hidden:""`
	SkipHooks       bool   `name:"skip-hooks" hidden:""`
	SkipMergeDriver bool   `name:"skip-merge-driver" hidden:""`
	Force           bool   `hidden:""`
	FromJSONL       bool   `name:"from-jsonl" hidden:""`
}

// bdInitResult is bd init --json.
type bdInitResult struct {
	Prefix  string   `json:"prefix"`
	Backend string   `json:"backend"`
	Root    string   `json:"root"`
	Created []string `json:"created"`
}

func (c *bdInitCmd) Run(b *bdEnv) error {
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
	init, err := store.Init(b.ctx, dir, b.warn)
	if err != nil {
		return err
	}
	created = append(created, init.Created...)
	r, err := git.Discover(b.ctx, dir)
	if err != nil {
		return err
	}
	prefix, changed, err := setPrefix(b, r, c.Prefix)
	if err != nil {
		return err
	} else if changed {
		created = append(created, "ids.prefix "+prefix+" in .spool/config.json")
	}
	marker, err := beadsMarker(r.Root)
	if err != nil {
		return err
	}
	created = append(created, marker...)
	if b.JSON {
		return writeJSON(b.stdout, bdInitResult{Prefix: prefix, Backend: "spool", Root: r.Root, Created: nonNil(created)})
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
	if len(created) == 0 {
		fmt.Fprintf(b.stdout, "  Already initialized: nothing changed\n")
	}
	fmt.Fprintf(b.stdout, "\nRun bd quickstart to get started, bd prime for an agent's context.\n\n")
	return nil
}

// bdInitPrefix is the prefix bd init would take: --prefix without its
// trailing hyphens, else the directory's name made into a prefix spool
// accepts (lowercase letters and digits), else spool's default.
func bdInitPrefix(flag, root string) (string, error) {
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
// does: --prefix, else the prefix set already (bd: flag, then config), else
// one from the directory's name. It reports the prefix and whether it
// changed.
func setPrefix(b *bdEnv, r *git.Repo, flag string) (string, bool, error) {
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
	v, set, _ := cfg.Value("ids.prefix")
	if set && flag == "" {
		return fmt.Sprint(v), false, nil
	}
	prefix, err := bdInitPrefix(flag, r.Root)
	if err != nil || set && v == prefix {
		return prefix, false, err
	}
	if err := cfg.Set("ids.prefix", prefix); err != nil {
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
