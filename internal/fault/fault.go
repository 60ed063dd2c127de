// Package fault carries errors to the command line: each has a snake_case
// code, a kind that decides the exit code, and fields for --json output.
package fault

import (
	"errors"
	"fmt"
)

// Kind decides the exit code.
type Kind int

const (
	Unexpected  Kind = 1 // a bug or an unforeseen failure
	Usage       Kind = 2 // bad flags, arguments or values
	Rejected    Kind = 3 // refused by a domain rule
	Environment Kind = 4 // repository, storage, lock, git or an external tool
)

// Sentinels for errors.Is across packages.
var (
	ErrNotFound          = errors.New("not found")
	ErrInvalidTransition = errors.New("invalid state transition")
	ErrConflict          = errors.New("conflict")
	ErrUnauthorized      = errors.New("unauthorized")
	ErrOverQuota         = errors.New("over quota")
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

// New builds an Error; fields alternate key and value.
func New(kind Kind, code string, cause error, msg string, fields ...any) *Error {
	e := &Error{Kind: kind, Code: code, Message: msg, Err: cause}
	for i := 0; i+1 < len(fields); i += 2 {
		if e.Fields == nil {
			e.Fields = map[string]any{}
		}
		e.Fields[fmt.Sprint(fields[i])] = fields[i+1]
	}
	return e
}

// Usagef is a usage error.
func Usagef(code, format string, args ...any) *Error {
	return &Error{Kind: Usage, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a reference to something that does not exist.
func NotFound(what, id string) *Error {
	return New(Rejected, "not_found", ErrNotFound, fmt.Sprintf("%s %s not found", what, id), "id", id)
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var f *Error
	ok := errors.As(err, &f)
	return f, ok
}
