package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// boardMain measures spool serve (the board) on 10,000 tasks and 1,000
// queued jobs, built one command (one fsynced append) at a time through the
// services the CLI uses: the pages' and the API's wall times over HTTP,
// the latency from `spool task add` in another process to its event on
// the stream (/api/events) and to the refreshed page, and an idle board's
// CPU and memory with a stream open:
//
//	spoolbench board -spool BIN [-tasks 10000] [-jobs 1000] [-runs 21] [-appends 50] [-idle 60s] [-dir DIR]
func boardMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench board", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to measure (required)")
	tasks := fs.Int("tasks", 10_000, "tasks in the tracker")
	nJobs := fs.Int("jobs", 1000, "queued jobs")
	runs := fs.Int("runs", 21, "timed requests per URL, after one warm-up")
	appends := fs.Int("appends", 50, "task adds timed to the stream and the page")
	idle := fs.Duration("idle", time.Minute, "how long the idle board is watched")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" || *tasks < 1 || *nJobs < 0 || *runs < 1 || *appends < 1 || *idle <= 0 {
		return fmt.Errorf("%w: -spool BIN is required; -tasks, -runs, -appends and -idle must be positive", errUsage)
	}
	start := time.Now()
	b, dir, env, cleanup, err := benchRepo(*bin, *keep, "spool-bench-board-", "bench@spool.invalid")
	defer cleanup()
	if err != nil {
		return err
	}
	if err := jobsConfig(b, dir, env); err != nil {
		return err
	}
	mix, err := buildTasks(dir, *tasks)
	if err != nil {
		return err
	}
	if _, err := buildJobs(dir, *nJobs); err != nil {
		return err
	}
	fmt.Printf("dataset: %d tasks (%s) and %d queued jobs after 300 finished ones, one append per command, in %s (built in %s)\n",
		*tasks, mix, *nJobs, dir, time.Since(start).Round(time.Millisecond))
	printLoad()

	srv, err := startServe(b, dir, env)
	if err != nil {
		return err
	}
	defer srv.stop()
	// Interrupted, spoolbench still takes the board down: it runs in a
	// process group of its own, which the terminal's signals miss. Whatever
	// the measurement waits for then fails at once, and the deferred
	// cleanup runs.
	finished, got := make(chan struct{}), make(chan os.Signal, 1)
	defer close(finished)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			got <- s
			srv.stop()
			select {
			case <-finished:
			case <-time.After(10 * time.Second):
				cleanup()
				os.Exit(1)
			}
		case <-finished:
		}
	}()
	fmt.Printf("spool serve: %s (pid %d)\n", srv.base, srv.pid())
	err = benchBoard(srv, b, dir, env, *runs, *appends, *idle)
	select {
	case s := <-got:
		return fmt.Errorf("interrupted (%v)", s)
	default:
		return err
	}
}

func benchBoard(srv *server, bin, dir string, env []string, runs, appends int, idle time.Duration) error {
	client := &http.Client{Timeout: 30 * time.Second}
	for _, u := range []string{"/tasks", "/jobs", "/api/tasks", "/api/jobs", "/api/ready"} {
		t, size, err := getTimes(client, srv.base+u, nil, 1, runs)
		if err != nil {
			return err
		}
		fmt.Printf("GET %-12s wall %s  %8d bytes  (%d runs)\n", u, spread(t), size, runs)
	}
	rss, hwm := memory(srv.pid())
	fmt.Printf("spool serve after the requests: VmRSS %d KiB, VmHWM %d KiB\n", rss, hwm)

	st, err := openStream(srv.base, appends+16)
	if err != nil {
		return err
	}
	defer st.close()

	// Append → stream → page: another process adds a task; timed from just
	// before it starts to the stream delivering its task.created, and to
	// the end of the partial GET the page makes then (after its debounce).
	partial := http.Header{"X-Spool-Partial": {"1"}}
	var stream, refetch, total, proc []time.Duration
	for i := range appends {
		title := fmt.Sprintf("bench %d", i+1)
		at, exited, err := addTask(bin, dir, env, title, st.created, 20*time.Second)
		if err != nil {
			return err
		}
		time.Sleep(pageDebounce) // what the page waits before it fetches
		rt, _, err := getTimes(client, srv.base+"/tasks", partial, 0, 1)
		if err != nil {
			return err
		}
		stream = append(stream, at)
		refetch = append(refetch, rt[0])
		total = append(total, at+rt[0])
		proc = append(proc, exited)
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range [][]time.Duration{stream, refetch, total, proc} {
		slices.Sort(d)
	}
	fmt.Printf("spool task add (the process, start to exit):        %s  (%d runs)\n", spread(proc), appends)
	fmt.Printf("task add → its task.created on /api/events:         %s  (%d runs)\n", spread(stream), appends)
	fmt.Printf("partial GET /tasks (X-Spool-Partial: 1) after that: %s  (%d runs)\n", spread(refetch), appends)
	fmt.Printf("task add → event → partial GET /tasks done:         %s  (%d runs; the page waits %d ms more, its debounce)\n",
		spread(total), appends, pageDebounce.Milliseconds())
	if err := browserLatency(srv.base, bin, dir, env, appends); err != nil {
		return err
	}

	// Idle: one stream open, nothing appended.
	time.Sleep(2 * time.Second)
	msgs0, alive0 := st.messages.Load(), st.keepAlives.Load()
	cpu0, err := cpuTime(srv.pid())
	if err != nil {
		return err
	}
	select {
	case <-time.After(idle):
	case <-srv.done:
		return fmt.Errorf("spool serve exited while idle: %v", srv.err)
	}
	cpu1, err := cpuTime(srv.pid())
	if err != nil {
		return err
	}
	if st.ended.Load() {
		return fmt.Errorf("the event stream ended while idle")
	}
	rss, hwm = memory(srv.pid())
	tick := 10 * time.Millisecond // cpuTime's clock tick
	fmt.Printf("idle spool serve over %s, one stream open: CPU %d ticks = %s (%.3f%% of one core), %d messages and %d keep-alives sent, VmRSS %d KiB, VmHWM %d KiB\n",
		idle, (cpu1-cpu0)/tick, cpu1-cpu0, 100*float64(cpu1-cpu0)/float64(idle), st.messages.Load()-msgs0, st.keepAlives.Load()-alive0, rss, hwm)
	printLoad()
	return nil
}

// pageDebounce is how long the board's script (internal/board/assets/app.js)
// waits after an event before it fetches the page again.
const pageDebounce = 25 * time.Millisecond

// taskMix is what buildTasks made.
type taskMix struct{ closed, labelled, deps, claimed, blocked int }

func (m taskMix) String() string {
	return fmt.Sprintf("%d closed, %d labelled, %d waiting on an earlier one, %d claimed, %d blocked by the queue",
		m.closed, m.labelled, m.deps, m.claimed, m.blocked)
}

// buildTasks fills the tracker through the work queue's service, one
// command (and one fsynced append) each, as people and agents do: n tasks
// of priorities 0–4, half of them labelled, every tenth waiting on a task
// created three before it, and one in ten closed a little after it was
// made; then a few claimed by agents (next) and a few blocked by hand
// (spool block).
func buildTasks(dir string, n int) (taskMix, error) {
	var mix taskMix
	ctx := context.Background()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return mix, err
	}
	st.DeferSave = true // saved once, by Flush; the log is the same
	at := time.Now().Add(-time.Duration(n) * 20 * time.Second).UTC()
	q := wqservice.Open(store.Env{Store: st, Now: at, Actor: func(context.Context) (string, error) { return "bench@spool.invalid", nil }})
	labels := []string{"backend", "frontend", "infra", "docs", "automated"}
	ids := make([]string, 0, n)
	closeTask := func(j int) error {
		q.Now = at
		if _, err := q.Close(ctx, []string{ids[j]}, "done", false); err != nil {
			return err
		}
		mix.closed++
		return nil
	}
	for i := range n {
		q.Now = at
		t := workqueue.NewTask{Title: fmt.Sprintf("task number %d", i), Priority: i % 5, Type: "task",
			Description: "Generated for the board benchmark; it has a description of a typical length."}
		if i%2 == 0 {
			t.Labels = []string{labels[(i/2)%len(labels)]}
			mix.labelled++
		}
		if i%10 == 3 {
			t.Deps = []string{ids[i-3]} // never one of the closed (j%10 == 5)
			mix.deps++
		}
		created, err := q.Add(ctx, t)
		if err != nil {
			return mix, err
		}
		ids = append(ids, created.ID)
		at = at.Add(15 * time.Second)
		if j := i - 40; j >= 0 && j%10 == 5 {
			if err := closeTask(j); err != nil {
				return mix, err
			}
		}
	}
	for j := max(n-40, 0); j < n; j++ {
		if j%10 == 5 {
			if err := closeTask(j); err != nil {
				return mix, err
			}
		}
	}
	q.Now = time.Now().UTC() // live leases
	for k := range min(20, n/100) {
		c, _, err := q.Next(ctx, nil, nil, fmt.Sprintf("agent-%d", k%4))
		if err != nil {
			return mix, err
		}
		if c != nil {
			mix.claimed++
		}
	}
	for k := range min(10, n/100) {
		j := k*(n/10) - k*(n/10)%10 + 8 // open, no one's dependency, of priority 3: claimed by no one
		if _, err := q.Block(ctx, ids[j], "needs a decision from a human"); err != nil {
			return mix, err
		}
		mix.blocked++
	}
	return mix, st.Flush(ctx)
}

// server is a spool serve started as a child, in a process group of its
// own.
type server struct {
	cmd  *exec.Cmd
	base string        // http://127.0.0.1:PORT
	done chan struct{} // closed when it exited
	err  error         // how it exited, once done is closed
	once sync.Once
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// startServe starts `bin -C dir serve --addr 127.0.0.1:0` and reads the
// address it listens on from its first line.
func startServe(bin, dir string, env []string) (*server, error) {
	cmd := exec.Command(bin, "-C", dir, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = env
	first := &firstLine{line: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = first, os.Stderr
	// Its own group, so that stop reaches all of it; killed with spoolbench
	// should this die without stopping it.
	cmd.SysProcAttr = ownGroupDying()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	var line string
	select {
	case line = <-first.line:
	case <-s.done:
		return nil, fmt.Errorf("spool serve exited before it listened: %v", s.err)
	case <-time.After(time.Minute):
		s.stop()
		return nil, fmt.Errorf("spool serve printed no address within a minute")
	}
	rest, ok := strings.CutPrefix(line, "spool serve: ")
	u, err := url.Parse(strings.TrimSpace(rest))
	if !ok || err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		s.stop()
		return nil, fmt.Errorf("spool serve: want http://127.0.0.1:PORT/ on its first line, got %q", line)
	}
	s.base = "http://" + u.Host
	return s, nil
}

// stop ends the server's process group: SIGTERM, then SIGKILL after 5 s.
func (s *server) stop() {
	s.once.Do(func() {
		pgid := s.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
			}
		}
		// The group's leader gone, make sure nothing it started stays.
		syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// firstLine hands the first line written to it over, and discards the rest.
type firstLine struct {
	buf  []byte
	line chan string
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if !f.sent {
		f.buf = append(f.buf, p...)
		if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
			f.line <- string(f.buf[:i])
			f.sent, f.buf = true, nil
		}
	}
	return len(p), nil
}

// getTimes GETs u warmup times untimed, then n times timed, each body read
// to the end; it returns the sorted wall times and the last body's size.
func getTimes(c *http.Client, u string, h http.Header, warmup, n int) ([]time.Duration, int, error) {
	var times []time.Duration
	size := 0
	for i := range warmup + n {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return nil, 0, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return nil, 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		wall := time.Since(start)
		if err != nil {
			return nil, 0, fmt.Errorf("GET %s: %v", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, 0, fmt.Errorf("GET %s: %s\n%.500s", u, resp.Status, body)
		}
		size = len(body)
		if i >= warmup {
			times = append(times, wall)
		}
	}
	slices.Sort(times)
	return times, size, nil
}

// spread is sorted times' median, min and max.
func spread(t []time.Duration) string {
	return fmt.Sprintf("median %7.1f ms (min %7.1f, max %7.1f)", ms(t[len(t)/2]), ms(t[0]), ms(t[len(t)-1]))
}

// eventStream is an open /api/events.
type eventStream struct {
	cancel     context.CancelFunc
	created    chan arrival // task.created as they come; closed when the stream ends
	messages   atomic.Int64 // data messages
	keepAlives atomic.Int64 // comments
	ended      atomic.Bool
}

// arrival is a task.created the stream delivered: the task's title, when.
type arrival struct {
	title string
	at    time.Time
}

// openStream opens /api/events as a page does and reads it until close.
func openStream(base string, buffer int) (*eventStream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	timer := time.AfterFunc(30*time.Second, cancel) // for the headers only
	resp, err := http.DefaultClient.Do(req)
	if !timer.Stop() || err != nil {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, fmt.Errorf("GET /api/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET /api/events: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &eventStream{cancel: cancel, created: make(chan arrival, buffer)}
	go func() {
		defer close(s.created)
		defer s.ended.Store(true)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, ":") {
				s.keepAlives.Add(1)
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			at := time.Now()
			s.messages.Add(1)
			var ev struct {
				Type string
				Data struct {
					Title string `json:"title"`
				}
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == workqueue.TypeCreated {
				select {
				case s.created <- arrival{ev.Data.Title, at}:
				default: // nobody waits for that many
				}
			}
		}
	}()
	return s, nil
}

func (s *eventStream) close() { s.cancel() }

// addTask runs `bin -C dir task add TITLE` and waits, at most limit, for
// the stream to deliver its task.created. It returns the time from just
// before the process started to the event, and to the process's exit.
func addTask(bin, dir string, env []string, title string, created <-chan arrival, limit time.Duration) (event, exit time.Duration, err error) {
	cmd := exec.Command(bin, "-C", dir, "task", "add", title)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	exited := make(chan error, 1)
	var exitAt time.Time
	go func() { err := cmd.Wait(); exitAt = time.Now(); exited <- err }()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	var got time.Time
	for got.IsZero() {
		select {
		case a, ok := <-created:
			if !ok {
				cmd.Process.Kill()
				<-exited
				return 0, 0, fmt.Errorf("the event stream ended")
			}
			if a.title == title {
				got = a.at
			}
		case <-deadline.C:
			cmd.Process.Kill()
			<-exited
			return 0, 0, fmt.Errorf("no task.created for %q on the stream within %s\n%s", title, limit, out.Bytes())
		}
	}
	select {
	case err = <-exited:
	case <-deadline.C:
		cmd.Process.Kill()
		err = <-exited
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.Bytes())
	}
	return got.Sub(start), exitAt.Sub(start), nil
}
