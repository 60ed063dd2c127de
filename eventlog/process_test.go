package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the writer processes of the concurrency and
// crash tests: with childModeEnv set it runs that mode instead of the tests.
const (
	childModeEnv    = "SPOOL_EVENTLOG_TEST_CHILD"
	childDirEnv     = "SPOOL_EVENTLOG_TEST_DIR"
	childPrivateEnv = "SPOOL_EVENTLOG_TEST_PRIVATE"
	childCountEnv   = "SPOOL_EVENTLOG_TEST_COUNT"
	childNameEnv    = "SPOOL_EVENTLOG_TEST_NAME"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild appends events and prints each id on stdout once Append has
// returned, that is once the event is acknowledged.
//
//	append: COUNT events of about 200 bytes, then exit
//	loop:   small events until killed
//	large:  events with 64 KiB of data until killed, so a kill can tear a line
func runChild(mode string) error {
	l := Open(Options{Dir: os.Getenv(childDirEnv), PrivateDir: os.Getenv(childPrivateEnv), LockTimeout: time.Minute})
	name := os.Getenv(childNameEnv)
	count := -1
	if mode == "append" {
		n, err := strconv.Atoi(os.Getenv(childCountEnv))
		if err != nil {
			return err
		}
		count = n
	}
	var blob string
	if mode == "large" {
		blob = strings.Repeat("0123456789abcdef", 4<<10)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; count < 0 || i < count; i++ {
		data := map[string]any{"child": name, "i": i, "pad": "padding to make a realistic event line of a couple hundred bytes"}
		if blob != "" {
			data["blob"] = blob
		}
		evs, err := l.Append(context.Background(), time.Now(), name, []Draft{{Type: "test.appended", Subject: name, Data: data}}, AppendOptions{})
		if err != nil {
			return err
		}
		out.WriteString(evs[0].ID + "\n")
		if count < 0 {
			// The parent kills this process at any moment: the ack must be
			// out as soon as the append returned.
			if err := out.Flush(); err != nil {
				return err
			}
		}
	}
	return out.Flush()
}

func childCmd(mode, dir, private, name string, count int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childModeEnv+"="+mode, childDirEnv+"="+dir, childPrivateEnv+"="+private,
		childNameEnv+"="+name, childCountEnv+"="+strconv.Itoa(count))
	return cmd
}

func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 8 processes")
	}
	const procs, each = 8, 500
	root := t.TempDir()
	dir, private := filepath.Join(root, "events"), filepath.Join(root, "private")
	acked := make([][]string, procs)
	var wg sync.WaitGroup
	for p := range procs {
		cmd := childCmd("append", dir, private, fmt.Sprintf("p%d", p), each)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			b, _ := io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil {
				t.Errorf("process %d: %v\n%s", p, err, stderr.String())
			}
			acked[p] = strings.Fields(string(b))
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	l := openTestLog(dir, private)
	// Every line parses, and Check finds seq contiguous, ids unique and matching.
	rep := mustCheckClean(t, l.Log)
	if rep.Events != procs*each {
		t.Fatalf("Check counted %d events, want %d", rep.Events, procs*each)
	}
	events := readAll(t, l.Log)
	if len(events) != procs*each {
		t.Fatalf("read %d events, want %d", len(events), procs*each)
	}
	seqOf := map[string]uint64{}
	lastSeq := map[string]uint64{}
	for _, e := range events {
		if _, dup := seqOf[e.ID]; dup {
			t.Fatalf("duplicate id %s", e.ID)
		}
		if e.Seq != lastSeq[e.Writer]+1 {
			t.Fatalf("writer %s: seq %d after %d", e.Writer, e.Seq, lastSeq[e.Writer])
		}
		lastSeq[e.Writer] = e.Seq
		seqOf[e.ID] = e.Seq
	}
	// Each process's acknowledged events are in the log, in its order.
	for p, ids := range acked {
		if len(ids) != each {
			t.Fatalf("process %d acknowledged %d events, want %d", p, len(ids), each)
		}
		for i, id := range ids {
			seq, ok := seqOf[id]
			if !ok {
				t.Fatalf("process %d: acknowledged id %s is not in the log", p, id)
			}
			if i > 0 && seq <= seqOf[ids[i-1]] {
				t.Fatalf("process %d: event %d has seq %d, not after %d", p, i, seq, seqOf[ids[i-1]])
			}
		}
	}
}

// crashRounds runs a writer process per round and kills it with SIGKILL at a
// random moment after its first acknowledged append. It returns the
// acknowledged ids in order.
func crashRounds(t *testing.T, mode, dir, private string, rounds int, maxDelay time.Duration) []string {
	t.Helper()
	var acked []string
	for round := range rounds {
		cmd := childCmd(mode, dir, private, fmt.Sprintf("r%d", round), 0)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Wait for the first ack so the kill lands inside the append loop.
		first, ok := <-lines
		if ok {
			acked = append(acked, first)
			time.Sleep(time.Duration(rand.Int64N(int64(maxDelay))))
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for id := range lines {
			acked = append(acked, id)
		}
		err = cmd.Wait()
		if !ok {
			t.Fatalf("round %d: the writer died before its first append: %v\n%s", round, err, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: the writer exited on its own: %v\n%s", round, err, stderr.String())
		}
	}
	return acked
}

// checkAfterCrashes repairs the log with one Begin and checks that nothing
// acknowledged was lost and that at most one unacknowledged event per round
// (the one being appended when the kill came) made it to disk.
func checkAfterCrashes(t *testing.T, dir, private string, rounds int, acked []string) {
	t.Helper()
	l := openTestLog(dir, private)
	s, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	mustCheckClean(t, l.Log)
	events := readAll(t, l.Log)
	pos := map[string]int{}
	for i, e := range events {
		pos[e.ID] = i
	}
	last := -1
	for _, id := range acked {
		i, ok := pos[id]
		if !ok {
			t.Fatalf("acknowledged event %s was lost", id)
		}
		if i <= last {
			t.Fatalf("acknowledged event %s is out of order", id)
		}
		last = i
	}
	if unacked := len(events) - len(acked); unacked < 0 || unacked > rounds {
		t.Fatalf("%d events in the log, %d acknowledged: more than one unacknowledged event per round", len(events), len(acked))
	}
	backups, _ := filepath.Glob(filepath.Join(private, "torn", "*"))
	for _, b := range backups {
		data, _ := os.ReadFile(b)
		if len(data) == 0 || strings.Contains(string(data), "\n") {
			t.Fatalf("backup %s holds %d bytes, with a newline: not a torn tail", b, len(data))
		}
	}
	t.Logf("%d rounds: %d events, %d acknowledged, %d torn tails repaired", rounds, len(events), len(acked), len(backups))
}

func TestCrashSmallEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 100 processes")
	}
	root := t.TempDir()
	dir, private := filepath.Join(root, "events"), filepath.Join(root, "private")
	const rounds = 100
	acked := crashRounds(t, "loop", dir, private, rounds, 5*time.Millisecond)
	checkAfterCrashes(t, dir, private, rounds, acked)
}

func TestCrashLargeEvents(t *testing.T) {
	// Lines of 64 KiB take several pages to write: a kill can land inside
	// the write and leave a torn tail for the next Begin to repair.
	if testing.Short() {
		t.Skip("kills 100 processes")
	}
	root := t.TempDir()
	dir, private := filepath.Join(root, "events"), filepath.Join(root, "private")
	const rounds = 100
	acked := crashRounds(t, "large", dir, private, rounds, 5*time.Millisecond)
	checkAfterCrashes(t, dir, private, rounds, acked)
}
