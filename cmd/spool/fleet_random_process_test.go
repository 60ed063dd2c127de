package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// Three clones of one bare remote, each doing what a teammate does, in a
// random order: spool commands (tasks, claims, jobs, merge entries, PRDs,
// events of their own, syncs) between git commands (branches made and deleted, switches,
// stashes, hard resets, cleans, commits, pulls, pushes, fetches). Nothing
// git does loses or hides an event spool acknowledged, git is never
// refused because of spool, and once everyone has synced, every clone has
// every event, the same projections and a log verify accepts.
func fleetRandomTeam(t *testing.T) {
	if testing.Short() {
		t.Skip("three clones, a few hundred commands")
	}
	bin := spoolBinary(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SPOOL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SPOOL_TEST_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	r, clones, envs := syncClones(t, bin, 3)
	for i := range envs { // tables saved every quarter of the log, overlays between: as at a million events
		envs[i] = append(envs[i], "SPOOL_TEST_AMORTIZE=4")
	}
	team := make([]*teammate, len(clones))
	for i, dir := range clones {
		r.Git(dir, "config", "user.email", fmt.Sprintf("agent%d@example.com", i))
		r.Git(dir, "config", "user.name", fmt.Sprintf("Agent %d", i))
		team[i] = &teammate{t: t, r: r, bin: bin, dir: dir, env: envs[i], i: i}
		team[i].spool("status") // a fresh clone's first command: it takes a writer id
		team[i].writer = strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, ".git", "spool", "writer")))))
	}
	// The first teammate keeps spool watch running (syncing every second)
	// through it all: git must not notice.
	jobSpool(t, bin, clones[0], envs[0], "config", "set", "sync.interval", "1s")
	w := startWatch(t, bin, clones[0], envs[0])
	steps := soak(60, 120)
	for step := range steps {
		m := team[rng.IntN(len(team))]
		m.act(rng, step)
		m.check(step)
	}
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch: %v\n%s", err, w.output())
	}
	// Everyone syncs, twice round: every clone then has every event.
	for range 2 {
		for _, m := range team {
			jobSpool(t, bin, m.dir, m.env, "sync")
		}
	}
	var want map[string]int
	for _, m := range team {
		m.check(steps)
		var st struct {
			ByWriter map[string]int `json:"by_writer"`
		}
		if err := json.Unmarshal([]byte(jobSpool(t, bin, m.dir, m.env, "--json", "status")), &st); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = st.ByWriter
		} else if !mapsEqual(st.ByWriter, want) {
			t.Errorf("clone %d has events by writer %v, clone 0 %v", m.i, st.ByWriter, want)
		}
		for _, o := range team {
			if got := st.ByWriter[o.writer]; got < o.acked {
				t.Errorf("clone %d has %d of clone %d's events, which acknowledged %d", m.i, got, o.i, o.acked)
			}
		}
		titles := m.allTitles()
		for _, o := range team {
			for _, title := range o.titles {
				if !slices.Contains(titles, title) {
					t.Errorf("clone %d lacks clone %d's task %q", m.i, o.i, title)
				}
			}
		}
	}
	sameProjections(t, bin, clones, envs)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// teammate is one clone and what spool acknowledged there.
type teammate struct {
	t        *testing.T
	r        *gittest.Repo
	bin, dir string
	env      []string
	i        int
	writer   string
	acked    int      // events of this clone's writer, as status last said
	titles   []string // tasks this clone added
	branches []string
	stashed  bool
}

func (m *teammate) spool(args ...string) string {
	m.t.Helper()
	return jobSpool(m.t, m.bin, m.dir, m.env, args...)
}

// git runs a git command that spool must never make fail.
func (m *teammate) git(args ...string) string {
	m.t.Helper()
	return m.r.Git(m.dir, args...)
}

// act does one random thing a teammate does.
func (m *teammate) act(rng *rand.Rand, step int) {
	m.t.Helper()
	switch k := rng.IntN(18); {
	case k < 3:
		title := fmt.Sprintf("clone %d step %d", m.i, step)
		m.spool("task", "add", title, "-p", strconv.Itoa(rng.IntN(5)))
		m.titles = append(m.titles, title)
	case k == 3:
		out := m.spool("--json", "next")
		var claimed struct{ ID string }
		if json.Unmarshal([]byte(out), &claimed) == nil && claimed.ID != "" {
			if rng.IntN(2) == 0 {
				m.spool("done", claimed.ID)
			} else {
				m.spool("fail", claimed.ID, "--error", "flaky")
			}
		}
	case k == 4:
		m.spool("job", "submit", fmt.Sprintf("build-%d-%d", m.i, step), "--", "true")
	case k == 5:
		m.spool("append", "deploy.finished", "-s", "web", "-d", fmt.Sprintf(`{"step":%d}`, step))
	case k == 6:
		m.spool("sync")
	case k == 7: // a feature branch, with a commit
		b := fmt.Sprintf("topic-%d-%d", m.i, step)
		m.git("switch", "-q", "-c", b)
		os.WriteFile(filepath.Join(m.dir, b+".txt"), []byte(b+"\n"), 0o644)
		m.git("add", "-A")
		m.git("commit", "-q", "-m", b)
		m.branches = append(m.branches, b)
	case k == 8: // back to main, perhaps deleting the branch it was on
		cur := m.git("branch", "--show-current")
		m.git("switch", "-q", "main")
		if cur != "main" && rng.IntN(2) == 0 {
			m.git("branch", "-q", "-D", cur)
			m.branches = slices.DeleteFunc(m.branches, func(b string) bool { return b == cur })
		}
	case k == 9 && len(m.branches) > 0:
		m.git("switch", "-q", m.branches[rng.IntN(len(m.branches))])
	case k == 10: // work in progress stashed, or brought back
		if m.stashed {
			m.git("stash", "pop", "-q")
			m.stashed = false
			break
		}
		os.WriteFile(filepath.Join(m.dir, fmt.Sprintf("wip-%d-%d.txt", m.i, step)), []byte("wip\n"), 0o644)
		m.git("stash", "-q", "--include-untracked")
		m.stashed = true
	case k == 11:
		m.git("reset", "-q", "--hard")
		m.git("clean", "-q", "-fdx")
	case k == 12:
		m.git("fetch", "-q", "origin")
	case k == 13 && m.git("branch", "--show-current") == "main" && !m.stashed:
		m.commitWork()
		m.git("pull", "-q", "--rebase", "origin", "main")
		os.WriteFile(filepath.Join(m.dir, fmt.Sprintf("main-%d-%d.txt", m.i, step)), []byte("x\n"), 0o644)
		m.git("add", "-A")
		m.git("commit", "-q", "-m", fmt.Sprintf("main: %d", step))
		m.git("push", "-q", "origin", "main")
	case k == 14 && m.git("branch", "--show-current") == "main" && !m.stashed:
		m.commitWork()
		m.git("pull", "-q", "--rebase", "origin", "main")
	case k == 15 && strings.HasPrefix(m.git("branch", "--show-current"), "topic-"):
		// The branch checked out, to the train; a second submit of the
		// workspace is refused while its first entry is active, and so is
		// a workspace with uncommitted changes.
		if out, err := jobSpoolErr(m.bin, m.dir, m.env, "merge", "submit"); err != nil && !strings.Contains(out, "already has active entry") && !strings.Contains(out, "has uncommitted changes") {
			m.t.Fatalf("spool merge submit: %v\n%s", err, out)
		}
	case k == 16:
		feature := fmt.Sprintf("feature-%d", m.i)
		m.spool("prd", "start", feature)
		m.spool("prd", "add", feature, fmt.Sprintf("prd-%d-%d", m.i, step))
	default:
		m.spool("ready")
	}
}

// commitWork commits what the teammate changed (a popped stash), as one
// does before a pull: spool's own files are never among it (check).
func (m *teammate) commitWork() {
	m.t.Helper()
	if m.git("status", "--porcelain", "--untracked-files=no") != "" {
		m.git("commit", "-q", "-am", "wip")
	}
}

// allTitles lists the titles of every task, whatever its status.
func (m *teammate) allTitles() []string {
	m.t.Helper()
	var tasks []struct{ Title string }
	if err := json.Unmarshal([]byte(m.spool("--json", "task", "list")), &tasks); err != nil {
		m.t.Fatal(err)
	}
	titles := make([]string, len(tasks))
	for i, x := range tasks {
		titles[i] = x.Title
	}
	return titles
}

// check proves the clone still has every event it acknowledged (its
// writer's count never goes back) and every task it added, and that spool
// left nothing of its own in the work tree.
func (m *teammate) check(step int) {
	m.t.Helper()
	var st struct {
		ByWriter map[string]int `json:"by_writer"`
	}
	if err := json.Unmarshal([]byte(m.spool("--json", "status")), &st); err != nil {
		m.t.Fatal(err)
	}
	if n := st.ByWriter[m.writer]; n < m.acked {
		m.t.Fatalf("step %d: clone %d has %d of its own events, had %d", step, m.i, n, m.acked)
	} else {
		m.acked = n
	}
	titles := m.allTitles()
	for _, title := range m.titles {
		if !slices.Contains(titles, title) {
			m.t.Fatalf("step %d: clone %d lost its task %q", step, m.i, title)
		}
	}
	for _, line := range strings.Split(m.git("status", "--porcelain", "--untracked-files=all", "--ignored"), "\n") {
		if strings.Contains(line, ".spool/") && !strings.HasSuffix(line, ".spool/config.json") {
			m.t.Fatalf("step %d: clone %d's work tree has a spool file: %q", step, m.i, line)
		}
	}
}
