package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// fleetMain measures claims through a local bare remote (sync.claims =
// remote): the latency of one uncontended claim and of a sync with nothing
// new, then claims per second with 1, 2, 4 and 8 clones each running
// spool next in a loop for a while; and how long an event takes from one
// clone's spool sync to another clone's log with spool watch running, at
// each sync.interval of -propagate:
//
//	spoolbench fleet -spool BIN [-tasks 2000] [-runs 21] [-for 10s] [-clones 1,2,4,8] [-propagate 10s,1s] [-events 11]
//
// With -from DIR (a scale dataset: just bench-scale artifacts/scale), it
// measures instead what a large log costs two clones sharing it: the first
// sync, a fresh clone's first command, a sync sending one event and
// another receiving it, a status after a git fetch, a claim through the
// remote, and the remote's growth.
func fleetMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench fleet", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	tasks := fs.Int("tasks", 2000, "tasks in the log, more than the claims a run makes")
	runs := fs.Int("runs", 21, "timed runs of the single claim and the sync (0: skip)")
	dur := fs.Duration("for", 10*time.Second, "how long each contention run claims")
	sizes := fs.String("clones", "1,2,4,8", "clone counts to contend")
	intervals := fs.String("propagate", "10s,1s", "sync.interval values of the watching clone (\"\": skip)")
	events := fs.Int("events", 11, "events timed from one clone to the other, at each interval")
	from := fs.String("from", "", "instead: two clones of a copy of this repository (a scale dataset) through a bare remote")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	b, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	top, err := os.MkdirTemp("", "spool-bench-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(top)
	printLoad()
	if *from != "" {
		return fleetFrom(b, *from, top, *runs)
	}

	f, err := newFleet(b, filepath.Join(top, "one"), *tasks, 1)
	if err != nil {
		return err
	}
	for _, c := range [][]string{{"next"}, {"sync"}} {
		if *runs == 0 {
			break
		}
		t, err := repeat(1, *runs, func() *exec.Cmd {
			cmd := exec.Command(b, c...)
			cmd.Dir, cmd.Env = f.clones[0], f.env(0)
			return cmd
		})
		if err != nil {
			return err
		}
		fmt.Printf("spool %-5s through the remote (%d tasks): wall median %6.1f ms (min %6.1f, max %6.1f)  (%d runs)\n",
			c[0], *tasks, ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), *runs)
	}

	for _, s := range strings.Split(*sizes, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			return fmt.Errorf("%w: -clones %q", errUsage, *sizes)
		}
		f, err := newFleet(b, filepath.Join(top, fmt.Sprint("c", n)), *tasks, n)
		if err != nil {
			return err
		}
		if err := f.contend(*dur); err != nil {
			return err
		}
	}
	for _, s := range strings.Split(*intervals, ",") {
		if s == "" {
			continue
		}
		interval, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%w: -propagate %q", errUsage, *intervals)
		}
		f, err := newFleet(b, filepath.Join(top, "p"+s), 10, 2)
		if err != nil {
			return err
		}
		if err := f.propagate(interval, *events); err != nil {
			return err
		}
	}
	return nil
}

// propagate starts spool watch in the second clone with sync.interval set
// to interval, then n times, at a random point of the interval, adds a
// task in the first and syncs it, and times from the sync's end until the
// second clone's log has the task.
func (f *fleet) propagate(interval time.Duration, n int) error {
	a, b := f.clones[0], f.clones[1]
	if _, err := run(b, f.env(1), f.bin, "config", "set", "sync.interval", interval.String()); err != nil {
		return err
	}
	writer, err := os.ReadFile(filepath.Join(a, ".git", "spool", "writer"))
	if err != nil {
		return err
	}
	theirs := filepath.Join(b, ".git", "spool", "events", strings.TrimSpace(string(writer))+".jsonl")
	watch := exec.Command(f.bin, "watch")
	watch.Dir, watch.Env = b, f.env(1)
	if err := watch.Start(); err != nil {
		return err
	}
	defer func() {
		watch.Process.Signal(os.Interrupt)
		watch.Wait()
	}()
	time.Sleep(time.Second) // its first sync
	var lat []time.Duration
	for k := range n {
		// At a random point of the watcher's interval, as a teammate's push.
		time.Sleep(rand.N(interval))
		title := fmt.Sprintf("propagated %d", k)
		if _, err := run(a, f.env(0), f.bin, "task", "add", title); err != nil {
			return err
		}
		if _, err := run(a, f.env(0), f.bin, "sync"); err != nil {
			return err
		}
		start := time.Now()
		for {
			if tailHas(theirs, title) {
				break
			}
			if time.Since(start) > 3*interval+10*time.Second {
				return fmt.Errorf("%s never reached the watching clone", title)
			}
			time.Sleep(5 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	fmt.Printf("an event from one clone's spool sync to another's log, spool watch running with sync.interval %s: median %6.0f ms, min %6.0f ms, max %6.0f ms (%d events)\n",
		interval, ms(lat[len(lat)/2]), ms(lat[0]), ms(lat[len(lat)-1]), n)
	return nil
}

// tailHas says whether the last 64 KiB of the file at path hold s: a
// writer file of a million events is not read whole at every look.
func tailHas(path, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	from := max(0, fi.Size()-64<<10)
	b := make([]byte, fi.Size()-from)
	n, _ := f.ReadAt(b, from)
	return strings.Contains(string(b[:n]), s)
}

// fleet is a bare remote and clones of it with sync.claims = remote.
type fleet struct {
	bin    string
	remote string
	clones []string
}

func (f *fleet) env(i int) []string {
	return append(os.Environ(), fmt.Sprintf("SPOOL_ACTOR=agent%d@spool.invalid", i), "SPOOL_NOW=",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@spool.invalid", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@spool.invalid")
}

// newFleet makes the remote and n clones; the first adds tasks (one
// command, one fsynced append each, as the CLI writes them) and syncs.
func newFleet(bin, dir string, tasks, n int) (*fleet, error) {
	f := &fleet{bin: bin, remote: filepath.Join(dir, "remote.git")}
	first := filepath.Join(dir, "clone0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"git", "init", "-q", "--bare", "-b", "main", f.remote},
		{"git", "init", "-q", "-b", "main", first},
	}
	for _, s := range steps {
		if _, err := run(dir, f.env(0), s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	for _, s := range [][]string{
		{bin, "init"}, {bin, "config", "set", "sync.claims", "remote"},
		{"git", "remote", "add", "origin", f.remote}, {bin, "config", "set", "merge.remote", "origin"},
		{"git", "add", "-A"}, {"git", "commit", "-q", "-m", "spool"}, {"git", "push", "-q", "origin", "main"},
	} {
		if _, err := run(first, f.env(0), s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	for k := range tasks {
		if _, err := run(first, f.env(0), bin, "task", "add", fmt.Sprintf("task %05d", k), "-p", fmt.Sprint(k%5)); err != nil {
			return nil, err
		}
	}
	if _, err := run(first, f.env(0), bin, "sync"); err != nil {
		return nil, err
	}
	f.clones = []string{first}
	for i := 1; i < n; i++ {
		c := filepath.Join(dir, fmt.Sprint("clone", i))
		if _, err := run(dir, f.env(i), "git", "clone", "-q", f.remote, c); err != nil {
			return nil, err
		}
		if _, err := run(c, f.env(i), bin, "sync"); err != nil {
			return nil, err
		}
		f.clones = append(f.clones, c)
	}
	return f, nil
}

// contend runs spool next in a loop in every clone at once for d and
// prints the claims per second in all and the claims' latencies.
func (f *fleet) contend(d time.Duration) error {
	var mu sync.Mutex
	var lat []time.Duration
	won := make([]int, len(f.clones)) // claims per clone: how fair the remote is
	errs := make(chan error, len(f.clones))
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for i, dir := range f.clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t := time.Now()
				if _, err := run(dir, f.env(i), f.bin, "next"); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t))
				won[i]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	slices.Sort(lat)
	fmt.Printf("%d clone(s) contending: %4d claims in %.1f s = %5.1f claims/s; a claim's wall median %6.1f ms, p90 %6.1f ms, max %6.1f ms; claims per clone %d–%d\n",
		len(f.clones), len(lat), elapsed.Seconds(), float64(len(lat))/elapsed.Seconds(),
		ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[len(lat)-1]), slices.Min(won), slices.Max(won))
	return nil
}

// fleetFrom times two clones of a copy of src sharing its log through a
// bare remote, with sync.claims = remote; each step runs runs times, and
// as many events go from one clone to the other running spool watch with
// sync.interval 1s.
func fleetFrom(bin, src, top string, runs int) error {
	remote, one, two := filepath.Join(top, "remote.git"), filepath.Join(top, "one"), filepath.Join(top, "two")
	if _, err := run(top, nil, "cp", "-a", src, one); err != nil {
		return err
	}
	now := "SPOOL_NOW="
	if b, err := os.ReadFile(filepath.Join(src, "spoolbench-scale.json")); err == nil {
		var meta struct{ Now string }
		if json.Unmarshal(b, &meta) == nil && meta.Now != "" {
			now += meta.Now // the dataset's clock: its leases and backoffs as built
		}
	}
	env := func(actor string) []string {
		return append(os.Environ(), now, "SPOOL_ACTOR="+actor, "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@spool.invalid",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@spool.invalid")
	}
	e1, e2 := env("one@spool.invalid"), env("two@spool.invalid")
	for _, s := range [][]string{
		{"git", "init", "-q", "--bare", "-b", "main", remote},
		{"git", "-C", one, "remote", "add", "origin", remote},
		{"git", "-C", one, "add", ".spool"}, {"git", "-C", one, "commit", "-q", "--allow-empty", "-m", "spool"},
		{"git", "-C", one, "push", "-q", "origin", "HEAD:main"},
		{bin, "-C", one, "status"}, // the copy's first command checks the log again (new inodes)
		{bin, "-C", one, "config", "set", "sync.claims", "remote"},
	} {
		if _, err := run(top, e1, s[0], s[1:]...); err != nil {
			return err
		}
	}
	step := func(name string, t timings) {
		fmt.Printf("%-44s wall median %8.1f ms (min %8.1f, max %8.1f)  peak RSS %6.1f MiB  (%d runs)\n",
			name, ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), float64(t.maxRSS)/1024, len(t.wall))
	}
	once := func(name string, env []string, args ...string) error {
		t, err := repeat(0, 1, func() *exec.Cmd { c := exec.Command(bin, args...); c.Env = env; return c })
		if err == nil {
			step(name, t)
		}
		return err
	}
	if err := once("the first sync of the whole log", e1, "-C", one, "sync"); err != nil {
		return err
	}
	if _, err := run(top, e2, "git", "clone", "-q", remote, two); err != nil {
		return err
	}
	if err := once("a fresh clone's first status", e2, "-C", two, "status"); err != nil {
		return err
	}
	size := func() string {
		out, _ := run(top, nil, "du", "-sm", remote)
		return strings.Fields(out + " ?")[0] + " MB"
	}
	before := size()
	add := func() error { _, err := run(top, e1, bin, "-C", one, "task", "add", "bench"); return err }
	var sent timings
	received, err := repeatPrepared(0, runs, func() (*exec.Cmd, error) {
		if err := add(); err != nil {
			return nil, err
		}
		t, err := repeat(0, 1, func() *exec.Cmd { c := exec.Command(bin, "-C", one, "sync"); c.Env = e1; return c })
		sent.wall, sent.maxRSS = append(sent.wall, t.wall...), max(sent.maxRSS, t.maxRSS)
		c := exec.Command(bin, "-C", two, "sync")
		c.Env = e2
		return c, err
	})
	if err != nil {
		return err
	}
	slices.Sort(sent.wall)
	step("spool sync sending one event", sent)
	step("spool sync receiving it in the other clone", received)
	fetched, err := repeatPrepared(0, runs, func() (*exec.Cmd, error) {
		for _, s := range [][]string{{bin, "-C", one, "task", "add", "bench"}, {bin, "-C", one, "sync"}, {"git", "-C", two, "fetch", "-q", "origin"}} {
			if _, err := run(top, e1, s[0], s[1:]...); err != nil {
				return nil, err
			}
		}
		c := exec.Command(bin, "-C", two, "status")
		c.Env = e2
		return c, nil
	})
	if err != nil {
		return err
	}
	step("spool status after a git fetch of one event", fetched)
	claims, err := repeat(0, runs, func() *exec.Cmd { c := exec.Command(bin, "-C", one, "next"); c.Env = e1; return c })
	if err != nil {
		return err
	}
	step("spool next through the remote", claims)
	fmt.Printf("the remote: %s before the %d syncs and %d claims, %s after\n", before, 2*runs, runs, size())
	f := &fleet{bin: bin, remote: remote, clones: []string{one, two}}
	return f.propagate(time.Second, runs)
}
