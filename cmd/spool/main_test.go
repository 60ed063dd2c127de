package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spoolhq/spool/internal/git/gittest"
	"golang.org/x/crypto/ssh"
)

func TestMain(m *testing.M) {
	testscript.Main(removeBinary{m}, map[string]func(){
		"spool": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		"bd":    func() { os.Exit(runAsBeads("bd", os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// removeBinary removes what spoolBinary built once the tests have run.
type removeBinary struct{ *testing.M }

func (m removeBinary) Run() int {
	go watchdog(time.Now())
	defer gittest.Setup()() // one git environment for all: tests with repositories run in parallel
	flag.Parse()
	if !flagGiven("test.parallel") {
		// Most tests here wait on processes and git rather than compute:
		// more of them at once than the 2 cores' default keeps both busy.
		flag.Set("test.parallel", "6")
	}
	code := m.M.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	return code
}

// flagGiven says whether the command line set the flag named name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// userHome is HOME as the test binary started, before gittest.Setup.
var userHome = os.Getenv("HOME")

// built is spool, built once for the tests that run separate processes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// spoolBinary returns spool built from this package.
func spoolBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "spool-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "spool")
		build := exec.Command("go", "build", "-o", built.bin, ".")
		// The user's HOME, not the tests' (gittest.Setup): Go's build cache
		// lives under it, and an empty one rebuilds every package.
		build.Env = append(os.Environ(), "HOME="+userHome)
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// TestScript runs testdata/script/*.txtar: the CLI as a user types it.
func TestScript(t *testing.T) {
	t.Parallel()
	testscript.Run(t, scriptParams(t, filepath.Join("..", "..", "testdata", "script")))
}

func scriptParams(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir: dir,
		// Under the test's own temp dir: testscript removes its default
		// root (/tmp/go-test-script*) only once every script has run, so
		// a run of some (-run TestScript/log) left one behind each time.
		WorkdirRoot: t.TempDir(),
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exit":        cmdExit,
			"sleep":       cmdSleep,
			"jsonerr":     cmdJSONErr,
			"jsonwarn":    cmdJSONWarn,
			"holdlock":    cmdHoldLock,
			"releaselock": cmdReleaseLock,
			"grab":        cmdGrab,
			"replace":     cmdReplace,
			"readonly":    cmdReadOnly,
			"sshkey":      cmdSSHKey,
		},
		Setup: func(env *testscript.Env) error {
			testdata, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
			if err != nil {
				return err
			}
			env.Setenv("TESTDATA", testdata) // fixtures such as the fake bd
			home := filepath.Join(env.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			for k, v := range map[string]string{
				"HOME":                home,
				"GIT_CONFIG_NOSYSTEM": "1",
				"GIT_AUTHOR_NAME":     "Ada",
				"GIT_AUTHOR_EMAIL":    "ada@example.com",
				"GIT_COMMITTER_NAME":  "Ada",
				"GIT_COMMITTER_EMAIL": "ada@example.com",
				"SPOOL_ACTOR":         "",
				"SPOOL_NOW":           "",
				"NO_COLOR":            "1",
				"SPOOL_CHECK_DECIDE":  "1", // every decision runs twice; a second answer that differs fails the command
			} {
				env.Setenv(k, v)
			}
			// Keep git from finding a repository above $WORK.
			env.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(env.WorkDir))
			// For hook scripts that must run without spool on PATH.
			env.Setenv("PATH_WITHOUT_SPOOL", pathWithout(env.Getenv("PATH"), "spool"))
			return nil
		},
	}
}

// cmdExit runs a program and checks its exact exit code:
//
//	exit 3 spool task show nope
//
// stdout and stderr are kept for the stdout/stderr assertions that follow.
// The program sees PATH, HOME and the GIT_*, SPOOL_* and NO_COLOR variables
// of the script, but is looked up on the test binary's PATH, so spool is
// found even when the script's PATH hides git (doctor.txtar relies on it).
func cmdExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	got := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		got = exitErr.ExitCode()
	} else if err != nil {
		ts.Fatalf("run %s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdGrab sets an environment variable from the last command's stdout:
//
//	grab ID 'created (sp-[0-9a-z]+)'
//
// sets $ID to the first group of the first match (ids are hashes, so
// scripts capture them rather than spell them out).
func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grab VAR REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("grab: %q does not match stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// cmdReplace replaces the first OLD in FILE with NEW, or with -last the
// last (OLD must be there): an edit as a person makes it.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	last := len(args) > 0 && args[0] == "-last"
	if last {
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace [-last] FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if !strings.Contains(string(b), args[1]) {
		ts.Fatalf("replace: %q is not in %s", args[1], args[0])
	}
	info, err := os.Stat(path)
	ts.Check(err)
	at := strings.Index(string(b), args[1])
	if last {
		at = strings.LastIndex(string(b), args[1])
	}
	out := string(b[:at]) + args[2] + string(b[at+len(args[1]):])
	ts.Check(os.WriteFile(path, []byte(out), info.Mode().Perm()))
}

func scriptEnv(ts *testscript.TestScript) []string {
	names := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "WORK": true, "NO_COLOR": true, "BD_ACTOR": true,
		"SPOOL_TASK_ID": true, "SPOOL_ATTEMPT": true}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "SPOOL_") {
			names[k] = true
		}
	}
	for _, k := range []string{"GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
		"GIT_COMMITTER_EMAIL", "SPOOL_ACTOR", "SPOOL_NOW", "SPOOL_BIN", "SPOOL_TEST_PANIC",
		"SPOOL_FAKEBD_LOG", "SPOOL_FAKEBD_READY", "SPOOL_FAKEBD_FAIL", "SPOOL_FAKEBD_FAIL_CMD", "SPOOL_FAKEBD_STORE",
		"SPOOL_FAKEBD_CREATE_FAILS", "SPOOL_FAKEBD_DELAY"} {
		names[k] = true
	}
	var env []string
	for k := range names {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// pathWithout drops the PATH entries that hold an executable named prog.
func pathWithout(path, prog string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if st, err := os.Stat(filepath.Join(dir, prog)); err == nil && !st.IsDir() {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// cmdJSONErr checks that stderr is exactly one JSON error object, as every
// command prints with --json, after any warning lines (see cmdJSONWarn):
//
//	jsonerr corrupt_log line=2 file~events/w1.jsonl$
//
// It requires the code and a non-empty message; key=value compares a field
// exactly and key~regexp matches it.
func cmdJSONErr(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: jsonerr CODE [key=value|key~regexp...]")
	}
	if err := checkJSONStderr(ts.ReadFile("stderr"), "error", args[0], args[1:]); err != nil {
		ts.Fatalf("%v", err)
	}
}

// cmdJSONWarn checks that stderr is JSON lines only, warnings and at most
// one error object at the end, and that a warning has the code and fields:
//
//	jsonwarn torn_tail_repaired message~^repaired
func cmdJSONWarn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: jsonwarn CODE [key=value|key~regexp...]")
	}
	if err := checkJSONStderr(ts.ReadFile("stderr"), "warning", args[0], args[1:]); err != nil {
		ts.Fatalf("%v", err)
	}
}

// checkJSONStderr reads stderr as --json writes it: one JSON object per
// line, {"warning":{…}} lines and then at most one {"error":{…}}, each with
// a code and a message. With kind "error" the error object must be there and
// match code and fields; with "warning" one of the warnings must.
func checkJSONStderr(stderr, kind, code string, fields []string) error {
	if stderr == "" || !strings.HasSuffix(stderr, "\n") {
		return fmt.Errorf("stderr is not JSON lines:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var warnings []map[string]any
	var errObj map[string]any
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var obj struct {
			Error   map[string]any `json:"error"`
			Warning map[string]any `json:"warning"`
		}
		if err := dec.Decode(&obj); err != nil || (obj.Error == nil) == (obj.Warning == nil) {
			return fmt.Errorf("stderr line %d is not a JSON error or warning object (%v):\n%s", i+1, err, stderr)
		}
		if dec.More() {
			return fmt.Errorf("stderr line %d holds more than one JSON value:\n%s", i+1, stderr)
		}
		if errObj != nil {
			return fmt.Errorf("stderr has more after the error object:\n%s", stderr)
		}
		got := obj.Warning
		if obj.Error != nil {
			got, errObj = obj.Error, obj.Error
		} else {
			warnings = append(warnings, got)
		}
		if msg, _ := got["message"].(string); msg == "" {
			return fmt.Errorf("no message: %s", line)
		}
		if c, _ := got["code"].(string); c == "" {
			return fmt.Errorf("no code: %s", line)
		}
	}
	if kind == "error" {
		if errObj == nil {
			return fmt.Errorf("stderr has no JSON error object:\n%s", stderr)
		}
		if err := matchFields(errObj, code, fields); err != nil {
			return fmt.Errorf("error %v:\n%s", err, stderr)
		}
		return nil
	}
	for _, w := range warnings {
		if w["code"] == code {
			if err := matchFields(w, code, fields); err != nil {
				return fmt.Errorf("warning %v:\n%s", err, stderr)
			}
			return nil
		}
	}
	return fmt.Errorf("no warning with code %q:\n%s", code, stderr)
}

// matchFields compares obj's code and key=value or key~regexp fields.
func matchFields(obj map[string]any, code string, fields []string) error {
	if got := fmt.Sprint(obj["code"]); got != code {
		return fmt.Errorf("code is %q, want %q", got, code)
	}
	for _, a := range fields {
		i := strings.IndexAny(a, "=~")
		if i < 0 {
			return fmt.Errorf("want key=value or key~regexp, got %q", a)
		}
		key, op, want := a[:i], a[i], a[i+1:]
		v, ok := obj[key]
		if !ok {
			return fmt.Errorf("has no field %q", key)
		}
		got := fmt.Sprint(v)
		if _, isString := v.(string); !isString {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if op == '=' && got != want {
			return fmt.Errorf("field %s is %s, want %s", key, got, want)
		}
		if op == '~' && !regexp.MustCompile(want).MatchString(got) {
			return fmt.Errorf("field %s is %s, does not match %s", key, got, want)
		}
	}
	return nil
}

// The jsonerr and jsonwarn helpers accept warning lines before the one
// error object and nothing else.
func TestCheckJSONStderr(t *testing.T) {
	t.Parallel()
	warn := `{"warning":{"code":"torn_tail_repaired","message":"repaired torn tail of w1.jsonl"}}` + "\n"
	errLine := `{"error":{"code":"lock_timeout","message":"locked","line":3}}` + "\n"
	for _, c := range []struct {
		stderr, kind, code string
		fields             []string
		ok                 bool
	}{
		{errLine, "error", "lock_timeout", []string{"line=3"}, true},
		{warn + errLine, "error", "lock_timeout", []string{"message~^locked$"}, true},
		{warn + warn + errLine, "error", "lock_timeout", nil, true},
		{warn, "warning", "torn_tail_repaired", []string{"message~w1"}, true},
		{warn + errLine, "warning", "torn_tail_repaired", nil, true},
		{warn, "error", "lock_timeout", nil, false},                               // no error object
		{errLine + errLine, "error", "lock_timeout", nil, false},                  // two
		{errLine + warn, "error", "lock_timeout", nil, false},                     // something after it
		{"spool: warning: torn\n" + errLine, "error", "lock_timeout", nil, false}, // loose text
		{warn + errLine, "error", "corrupt_log", nil, false},                      // another code
		{errLine, "error", "lock_timeout", []string{"line=4"}, false},
		{strings.TrimSuffix(errLine, "\n"), "error", "lock_timeout", nil, false},
		{`{"error":{"code":"x"}}` + "\n", "error", "x", nil, false}, // no message
		{errLine, "warning", "torn_tail_repaired", nil, false},
	} {
		err := checkJSONStderr(c.stderr, c.kind, c.code, c.fields)
		if (err == nil) != c.ok {
			t.Errorf("%s %s in %q: %v, want ok=%v", c.kind, c.code, c.stderr, err, c.ok)
		}
	}
}

// heldLocks are the locks holdlock took, per script.
var heldLocks sync.Map // *testscript.TestScript → *flock.Flock

// cmdHoldLock takes the event log's lock of the repository in DIR, as another
// process appending would, until releaselock or the end of the script:
//
//	holdlock repo
func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdlock DIR")
	}
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	cmd.Dir = ts.MkAbs(args[0])
	out, err := cmd.Output()
	ts.Check(err)
	private := filepath.Join(string(bytes.TrimSpace(out)), "spool")
	ts.Check(os.MkdirAll(private, 0o755))
	lock := flock.New(filepath.Join(private, "lock"))
	ok, err := lock.TryLock()
	ts.Check(err)
	if !ok {
		ts.Fatalf("lock %s is already held", lock.Path())
	}
	if _, dup := heldLocks.LoadOrStore(ts, lock); dup {
		lock.Unlock()
		ts.Fatalf("holdlock: this script already holds a lock")
	}
	ts.Defer(func() { releaseLock(ts) })
}

// cmdReleaseLock releases the lock holdlock took.
func cmdReleaseLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: releaselock")
	}
	if !releaseLock(ts) {
		ts.Fatalf("releaselock: no lock held")
	}
}

func releaseLock(ts *testscript.TestScript) bool {
	v, ok := heldLocks.LoadAndDelete(ts)
	if ok {
		v.(*flock.Flock).Unlock()
	}
	return ok
}

// cmdSleep pauses the script: sleep 300ms. Only for giving a background
// process a head start, never for timing assertions.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// cmdReadOnly runs a program with a directory read-only and checks its exit
// code, as exit does:
//
//	readonly .spool 0 spool task list
//
// As root (whom permission bits do not stop) the directory is bind-mounted
// read-only in a private mount namespace; otherwise its write bits are
// removed for the run.
func cmdReadOnly(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: readonly DIR CODE PROGRAM [ARGS...]")
	}
	dir := ts.MkAbs(args[0])
	if os.Getuid() == 0 {
		wrapped := append([]string{args[1], "unshare", "-m", "sh", "-c",
			`mount --bind -o ro "$0" "$0" && exec "$@"`, dir}, args[2:]...)
		cmdExit(ts, false, wrapped)
		return
	}
	var modes []func()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if info, err := os.Stat(path); err == nil {
			mode := info.Mode()
			os.Chmod(path, mode&^0o222)
			modes = append(modes, func() { os.Chmod(path, mode) })
		}
		return nil
	})
	defer func() {
		for _, restore := range modes {
			restore()
		}
	}()
	cmdExit(ts, false, args[1:])
}

// cmdSSHKey writes a new ed25519 key as ssh-keygen would: NAME, the
// OpenSSH private key (no passphrase), and NAME.pub.
//
//	sshkey $WORK/ada
func cmdSSHKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sshkey PATH")
	}
	_, raw, err := ed25519.GenerateKey(rand.Reader)
	ts.Check(err)
	block, err := ssh.MarshalPrivateKey(raw, filepath.Base(args[0]))
	ts.Check(err)
	signer, err := ssh.NewSignerFromKey(raw)
	ts.Check(err)
	path := ts.MkAbs(args[0])
	ts.Check(os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	ts.Check(os.WriteFile(path+".pub", []byte(pub+" "+filepath.Base(args[0])+"\n"), 0o644))
}

// The collector starts off with a 512 MiB limit unless the environment
// sets GOGC (then the runtime's settings stand) or GOMEMLIMIT (its limit).
func TestCollectorHonoursGoEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env        map[string]string
		off, limit bool
	}{
		{nil, true, true},
		{map[string]string{"GOMEMLIMIT": "300MiB"}, true, false},
		{map[string]string{"GOGC": "100"}, false, false},
		{map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, false, false},
	} {
		off, limit := collector(func(k string) string { return c.env[k] })
		if off != c.off || limit != c.limit {
			t.Errorf("%v: off %v limit %v, want %v %v", c.env, off, limit, c.off, c.limit)
		}
	}
}

// replay and verify hold the heap to the budget while the state fits, and
// to half again the live heap beyond it.
func TestHeapLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ live, want int64 }{
		{0, heapBudget},
		{heapBudget / 2, heapBudget},
		{heapBudget, heapBudget + heapBudget/2},
		{1 << 30, 3 << 29},
	} {
		if got := heapLimit(c.live); got != c.want {
			t.Errorf("heapLimit(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// afterEachGC's function runs after collections again and again, not just
// after the first.
func TestAfterEachGC(t *testing.T) {
	ran := make(chan struct{}, 16)
	afterEachGC(func() {
		select {
		case ran <- struct{}{}:
		default:
		}
	})
	// A collection right after the re-arm can miss the new token (still in
	// a register of the goroutine that made it): collect until it runs.
	for i := range 3 {
		deadline := time.After(10 * time.Second)
	wait:
		for {
			runtime.GC()
			select {
			case <-ran:
				break wait
			case <-deadline:
				t.Fatalf("round %d: the function did not run after 10 s of collections", i+1)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
