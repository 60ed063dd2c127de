package fault

import (
	"sort"
	"sync"
)

// Warning is what a command repaired or skipped without failing. Its code
// is named where it arises, never worked out from its text: under --json
// it is the line {"warning":{"code":Code,"message":Message}}.
type Warning struct {
	Code    WarningCode
	Message string
}

// WarningCode is a registered warning code.
type WarningCode struct{ Name string }

func (c WarningCode) String() string { return c.Name }

// CodeWarning is the code of a warning that has none of its own.
var CodeWarning = RegisterWarning("warning")

// Warned is a warning with no code of its own: what reaches a command as
// text alone.
func Warned(msg string) Warning { return Warning{Code: CodeWarning, Message: msg} }

var warnings struct {
	sync.Mutex
	codes map[string]WarningCode
}

// RegisterWarning declares a warning code, where the warning arises; a
// name registered twice panics.
func RegisterWarning(name string) WarningCode {
	warnings.Lock()
	defer warnings.Unlock()
	if warnings.codes == nil {
		warnings.codes = map[string]WarningCode{}
	}
	if _, dup := warnings.codes[name]; dup {
		panic("fault: warning code registered twice: " + name)
	}
	c := WarningCode{Name: name}
	warnings.codes[name] = c
	return c
}

// WarningCodes lists the registered warning codes, sorted by name.
func WarningCodes() []WarningCode {
	warnings.Lock()
	defer warnings.Unlock()
	out := make([]WarningCode, 0, len(warnings.codes))
	for _, c := range warnings.codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
