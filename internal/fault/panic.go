package fault

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
)

// PanicHandler reports a panic that is about to end the process: p is the
// value passed to panic, stack the goroutine's stack.
type PanicHandler func(p any, stack []byte)

var panicHandler atomic.Pointer[PanicHandler]

// SetPanicHandler installs the handler Go and Recover report through and
// returns the one it replaces (nil for the default, which prints p and the
// stack on stderr). The command line installs one that honours --json.
func SetPanicHandler(h PanicHandler) (previous PanicHandler) {
	var old *PanicHandler
	if h == nil {
		old = panicHandler.Swap(nil)
	} else {
		old = panicHandler.Swap(&h)
	}
	if old == nil {
		return nil
	}
	return *old
}

// Go runs fn in a new goroutine. Every goroutine spool starts goes through
// it (or defers Recover first): a panic left unrecovered in a goroutine would
// otherwise end the process with Go's exit status 2, which means usage here,
// and a bare trace even under --json. Instead the panic is reported through
// the installed PanicHandler and the process exits 1 (Unexpected).
func Go(fn func()) {
	go func() {
		defer Recover()
		debug.SetPanicOnFault(true) // a mapped file cut short: a panic the handler reports, not a crash
		fn()
	}()
}

// Recover, deferred as the first statement of a goroutine, reports a panic
// and exits 1 as Go does. It must be deferred directly (defer fault.Recover()),
// or recover finds nothing.
func Recover() {
	if p := recover(); p != nil {
		Crash(p, debug.Stack())
	}
}

// Crash reports p through the installed PanicHandler and exits 1.
func Crash(p any, stack []byte) {
	if h := panicHandler.Load(); h != nil {
		(*h)(p, stack)
	} else {
		fmt.Fprintf(os.Stderr, "spool: unexpected internal error (please report it): %v\n%s", p, stack)
	}
	os.Exit(int(Unexpected))
}
