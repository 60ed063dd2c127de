// Package fault carries errors to the command line: each has a snake_case
// code, a kind that decides the exit code, and fields for --json output.
//
// Codes are declared where they arise, with Register, next to the sentinel
// or constructor that produces them; Codes lists them all (the tables
// of docs/errors.md are tested against it). Classify turns any error into an *Error.
package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
)

// Kind decides the exit code.
type Kind int

const (
	Unexpected  Kind = 1 // a bug or an unforeseen failure
	Usage       Kind = 2 // bad flags, arguments or values
	Rejected    Kind = 3 // refused by a domain rule
	Environment Kind = 4 // repository, storage, lock, git or an external tool
)

// Code is a registered error code and the kind it always has.
type Code struct {
	Name string
	Kind Kind
}

func (c Code) String() string { return c.Name }

var registry struct {
	sync.Mutex
	codes     map[string]Code
	sentinels []sentinel
}

type sentinel struct {
	err  error
	code Code
}

// Register declares a code of a kind. Declaring the same name again with
// the same kind returns the same code (codes such as not_found are shared);
// with another kind it panics: a code always means one exit status.
func Register(kind Kind, name string) Code {
	registry.Lock()
	defer registry.Unlock()
	if registry.codes == nil {
		registry.codes = map[string]Code{}
	}
	c := Code{Name: name, Kind: kind}
	if old, ok := registry.codes[name]; ok && old != c {
		panic(fmt.Sprintf("fault: code %s registered as kind %d and %d", name, old.Kind, kind))
	}
	registry.codes[name] = c
	return c
}

// Codes lists every registered code, by name.
func Codes() []Code {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Code, 0, len(registry.codes))
	for _, c := range registry.codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Sentinel declares that an error wrapping err has code c, for packages
// whose errors are plain sentinels (the event log's): Classify finds it.
func Sentinel(c Code, err error) error {
	registry.Lock()
	defer registry.Unlock()
	registry.sentinels = append(registry.sentinels, sentinel{err, c})
	return err
}

// Sentinels for errors.Is across packages.
var (
	ErrNotFound          = errors.New("not found")
	ErrInvalidTransition = errors.New("invalid state transition")
	ErrConflict          = errors.New("conflict")
	ErrUnauthorized      = errors.New("unauthorized")
	ErrOverQuota         = errors.New("over quota")
)

// Codes every part of spool may produce.
var (
	CodeUnexpected             = Register(Unexpected, "unexpected")
	CodeInterrupted            = Register(Unexpected, "interrupted")
	CodeUsage                  = Register(Usage, "usage")
	CodeStorage                = Register(Environment, "storage")
	CodeNotFound               = Register(Rejected, "not_found")
	CodeInvalidStateTransition = Register(Rejected, "invalid_state_transition")
	CodeUnauthorized           = Register(Rejected, "unauthorized")
	CodeNoActor                = Register(Usage, "no_actor")
	CodeInvalidPriority        = Register(Usage, "invalid_priority")
	CodeAlreadyRunning         = Register(Environment, "already_running")
)

// Error is an error with a code, a kind and fields.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Fields  map[string]any
	Err     error // wrapped cause, often a sentinel
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Has reports whether e has code c.
func (e *Error) Has(c Code) bool { return e.Code == c.Name }

// Object is the error as --json prints it (and spool serve's API sends it):
// its fields, its code and its message.
func (e *Error) Object() map[string]any {
	obj := make(map[string]any, len(e.Fields)+2)
	for k, v := range e.Fields {
		obj[k] = v
	}
	obj["code"], obj["message"] = e.Code, e.Message
	return obj
}

// New builds an Error of code c; fields alternate key and value.
func New(c Code, cause error, msg string, fields ...any) *Error {
	e := &Error{Kind: c.Kind, Code: c.Name, Message: msg, Err: cause}
	for i := 0; i+1 < len(fields); i += 2 {
		if e.Fields == nil {
			e.Fields = map[string]any{}
		}
		e.Fields[fmt.Sprint(fields[i])] = fields[i+1]
	}
	return e
}

// Usagef is an error of code c (a usage error) with a formatted message.
func Usagef(c Code, format string, args ...any) *Error {
	return &Error{Kind: c.Kind, Code: c.Name, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a reference to something that does not exist.
func NotFound(what, id string) *Error {
	return New(CodeNotFound, ErrNotFound, fmt.Sprintf("%s %s not found", what, id), "id", id)
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var f *Error
	ok := errors.As(err, &f)
	return f, ok
}

// Fielder is an error that carries fields for --json (a file and line).
type Fielder interface {
	FaultFields() map[string]any
}

// Coder is an error type that knows its code (a failed git command).
type Coder interface {
	FaultCode() Code
}

// Classify maps any error onto an *Error: one in its chain, else a
// registered sentinel or an error type that knows its code, else a file
// system refusing a write (storage), an interruption, or unexpected.
func Classify(err error) *Error {
	if f, ok := As(err); ok {
		if f.Message == "" {
			f.Message = err.Error()
		}
		if f.Kind == 0 {
			f.Kind = Unexpected
		}
		return f
	}
	msg := err.Error()
	var f *Error
	registry.Lock()
	sentinels := registry.sentinels
	registry.Unlock()
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			f = New(s.code, err, msg)
			break
		}
	}
	var coder Coder
	if f == nil && errors.As(err, &coder) {
		f = New(coder.FaultCode(), err, msg)
	}
	if f == nil {
		f = classifyOther(err, msg)
	}
	var fielder Fielder
	if errors.As(err, &fielder) {
		for k, v := range fielder.FaultFields() {
			if f.Fields == nil {
				f.Fields = map[string]any{}
			}
			f.Fields[k] = v
		}
	}
	return f
}

func classifyOther(err error, msg string) *Error {
	if errors.Is(err, context.Canceled) {
		return New(CodeInterrupted, err, "interrupted")
	}
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES, syscall.EPERM} {
			if errors.Is(err, errno) {
				msg = fmt.Sprintf("cannot write %s: %v; reads work without write access, changes need it (to .spool/ and .git/spool/)",
					pathErr.Path, errno)
			}
		}
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
			if errors.Is(err, errno) {
				msg = fmt.Sprintf("cannot write %s: %v", pathErr.Path, errno)
			}
		}
		return New(CodeStorage, err, msg, "file", pathErr.Path)
	}
	return New(CodeUnexpected, err, msg)
}
