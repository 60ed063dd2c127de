package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spool log --follow's output is buffered (bulkOutput), and flushed at
// each poll: an event appended while it runs reaches a reader of its
// output while it still runs, in JSON and in columns.
func TestLogFollowWritesEachEventAsItComes(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	jobSpool(t, bin, dir, env, "task", "add", "first")
	for _, args := range [][]string{{"--json", "log", "-f", "--poll", "20ms"}, {"log", "-f", "--poll", "20ms"}} {
		cmd := exec.Command(bin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		await := func(want string) {
			t.Helper()
			deadline := time.After(20 * time.Second)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("%q: the output ended before a line with %q", args, want)
					}
					if strings.Contains(l, want) {
						return
					}
				case <-deadline:
					cmd.Process.Kill()
					t.Fatalf("%q: no line with %q within 20 s while it runs", args, want)
				}
			}
		}
		await("first")
		jobSpool(t, bin, dir, env, "task", "add", "second "+args[0])
		await("second " + args[0])
		cmd.Process.Signal(syscall.SIGINT)
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%q after an interrupt: %v", args, err)
		}
	}
}

// export -o replaces a file atomically, and the file a symlink names
// rather than the link; a pipe is written in place, not replaced by a file
// (as root, export -o /dev/null replaced /dev/null).
func TestExportOutputs(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	jobSpool(t, bin, dir, env, "task", "add", "exported")
	want := jobSpool(t, bin, dir, env, "export")
	if !strings.Contains(want, `"title":"exported"`) {
		t.Fatalf("export: %q", want)
	}

	tmp := t.TempDir()
	real, link := filepath.Join(tmp, "real.jsonl"), filepath.Join(tmp, "link.jsonl")
	if err := os.WriteFile(real, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	jobSpool(t, bin, dir, env, "export", "-o", link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link after export -o: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(real); string(got) != want {
		t.Fatalf("the link's file: %q, want %q", got, want)
	}

	fifo := filepath.Join(tmp, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	read := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the writer opens it
		if err != nil {
			read <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		read <- string(b)
	}()
	jobSpool(t, bin, dir, env, "export", "-o", fifo)
	select {
	case got := <-read:
		if got != want {
			t.Fatalf("through the pipe: %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nothing read from the pipe in 20 s")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe after export -o: %v %v", fi, err)
	}
	if _, err := jobSpoolErr(bin, dir, env, "export", "-o", tmp); err == nil {
		t.Fatal("export -o a directory succeeded")
	}

	// A symlink to a file not made yet: the file is made, the link kept.
	dangling := filepath.Join(tmp, "dangling")
	if err := os.Symlink(filepath.Join("sub", "new.jsonl"), dangling); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(tmp, "sub"), 0o755)
	jobSpool(t, bin, dir, env, "export", "-o", dangling)
	if got, _ := os.ReadFile(filepath.Join(tmp, "sub", "new.jsonl")); string(got) != want {
		t.Fatalf("through a dangling link: %q", got)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the dangling link after export -o: %v %v", fi, err)
	}

	// -o /dev/stdout with stdout a file opened to append: appended to, not
	// replaced by a file of the export alone.
	appended := filepath.Join(tmp, "appended")
	os.WriteFile(appended, []byte("header\n"), 0o644)
	f, err := os.OpenFile(appended, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-C", dir, "export", "-o", "/dev/stdout")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("export -o /dev/stdout: %v\n%s", err, stderr.String())
	}
	f.Close()
	if got, _ := os.ReadFile(appended); string(got) != "header\n"+want {
		t.Fatalf("export -o /dev/stdout >> file: %q", got)
	}

	// -o /dev/stderr with stderr a file opened to append: appended to too.
	f, err = os.OpenFile(appended, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "-C", dir, "export", "-o", "/dev/stderr")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = f
	if err := cmd.Run(); err != nil {
		t.Fatalf("export -o /dev/stderr: %v", err)
	}
	f.Close()
	if got, _ := os.ReadFile(appended); !strings.HasPrefix(string(got), "header\n"+want+want) {
		t.Fatalf("export -o /dev/stderr 2>> file: %q", got)
	}

	// A relative link in a directory reached through a symlink: its .. is
	// from where the directory is.
	os.MkdirAll(filepath.Join(tmp, "real", "sub"), 0o755)
	os.Symlink(filepath.Join(tmp, "real", "sub"), filepath.Join(tmp, "d"))
	os.Symlink(filepath.Join("..", "out.jsonl"), filepath.Join(tmp, "real", "sub", "link"))
	jobSpool(t, bin, tmp, env, "-C", dir, "export", "-o", filepath.Join(tmp, "d", "link"))
	if got, _ := os.ReadFile(filepath.Join(tmp, "real", "out.jsonl")); string(got) != want {
		t.Fatalf("through a link in a linked directory: %q", got)
	}

	// A pipe nobody reads: an interrupt ends the wait.
	lonely := filepath.Join(tmp, "lonely")
	if err := syscall.Mkfifo(lonely, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "-C", dir, "export", "-o", lonely)
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond) // past its start-up, into the wait for a reader
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("export to a pipe nobody read succeeded")
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("export to a pipe nobody read outlived an interrupt by 20 s")
	}
}

// Buffered output keeps its place before what the command writes to
// stderr after it: bd list's hint follows its lines on one terminal.
func TestBufferedOutputBeforeStderr(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	for _, title := range []string{"one", "two", "three"} {
		jobSpool(t, bin, dir, env, "task", "add", title)
	}
	cmd := exec.Command(bin, "-C", dir, "bd", "list", "-n", "2")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bd list: %v\n%s", err, out)
	}
	hint := strings.Index(string(out), "Showing 2 issues")
	if hint < 0 || strings.Count(string(out[:hint]), "\n") < 2 || strings.Contains(string(out[hint:]), "[P") {
		t.Fatalf("the hint is not after the lines:\n%s", out)
	}
}

// Output that cannot be written is an error, buffered or not: a full disk
// under spool's list and bd's exits non-zero and says so.
func TestBufferedOutputToAFullDisk(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	jobSpool(t, bin, dir, env, "task", "add", "one")
	for _, args := range [][]string{{"task", "list"}, {"--json", "task", "list"}, {"bd", "list"}, {"bd", "list", "--json"}, {"bd", "export"}} {
		cmd := exec.Command(bin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout = full
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("%q to a full disk: %v, stderr %q", args, err, stderr.String())
		}
	}
}
