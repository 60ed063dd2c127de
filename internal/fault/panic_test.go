package fault

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The panicking goroutine runs in a child process (this test binary again),
// since the process is meant to exit.
func TestGoPanicExitsOne(t *testing.T) {
	if os.Getenv("FAULT_TEST_CHILD") == "1" {
		SetPanicHandler(func(p any, stack []byte) {
			fmt.Fprintf(os.Stderr, "handled: %v\n", p)
			if !bytes.Contains(stack, []byte("panic_test.go")) {
				fmt.Fprintln(os.Stderr, "stack does not show where")
			}
		})
		Go(func() { panic("boom") })
		time.Sleep(30 * time.Second) // bounded: the panic ends the process first
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoPanicExitsOne$")
	cmd.Env = append(os.Environ(), "FAULT_TEST_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1\n%s", err, stderr.String())
	}
	if got := stderr.String(); got != "handled: boom\n" {
		t.Fatalf("stderr:\n%s", got)
	}
}

func TestSetPanicHandlerReturnsPrevious(t *testing.T) {
	if prev := SetPanicHandler(func(any, []byte) {}); prev != nil {
		t.Fatal("a handler was installed before")
	}
	if prev := SetPanicHandler(nil); prev == nil {
		t.Fatal("the handler was not returned")
	}
	if prev := SetPanicHandler(nil); prev != nil {
		t.Fatal("nil did not restore the default")
	}
}
