// Package config reads and writes .spool/config.json: flat dotted keys, each
// registered with a kind that validates its value.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
)

// Kind is the type of a key's value.
type Kind string

const (
	String   Kind = "string"
	Int      Kind = "int"
	Float    Kind = "float"
	Bool     Kind = "bool"
	Duration Kind = "duration" // a Go duration string such as "90s" or "1h"
	Enum     Kind = "enum"
	Strings  Kind = "strings" // a JSON array of strings
)

// Key is one configuration key.
type Key struct {
	Name    string
	Kind    Kind
	Default any // in the kind's Go type: string, int, float64, bool, time.Duration, []string
	Enum    []string
	Min     *float64 // lower bound for Int, Float and Duration (seconds)
	Max     *float64 // upper bound, likewise
	// Check refuses a well-typed value that would break a later command
	// (an id prefix spool cannot use, a branch name git refuses).
	Check func(v any) error
	Help  string
	// Derived, when set, is the value unset takes from other keys, and why
	// ("" when it is Default): config list shows what holds, not Default.
	Derived func(c *Config) (v any, why string)
}

// Rule is a check across keys, such as backoff.initial ≤ backoff.max.
type Rule func(c *Config) error

// Error codes of configuration.
var (
	CodeConfigInvalid      = fault.Register(fault.Environment, "config_invalid")
	CodeInvalidConfigValue = fault.Register(fault.Usage, "invalid_config_value")
	CodeUnknownConfigKey   = fault.Register(fault.Usage, "unknown_config_key")
)

var (
	registry = map[string]Key{}
	rules    []Rule
)

// RegisterRule adds a cross-key rule; capability packages call it from init.
func RegisterRule(r Rule) { rules = append(rules, r) }

// Register adds keys; capability packages call it from init.
func Register(keys ...Key) {
	for _, k := range keys {
		if _, dup := registry[k.Name]; dup {
			panic("config: key registered twice: " + k.Name)
		}
		registry[k.Name] = k
	}
}

// Keys lists every registered key, sorted by name.
func Keys() []Key {
	keys := make([]Key, 0, len(registry))
	for _, k := range registry {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Name < keys[j].Name })
	return keys
}

func init() {
	Register(
		Key{Name: "lock.timeout", Kind: Duration, Default: 10 * time.Second, Min: Min(0.001), Max: Max(3600),
			Help: "how long a command waits for the log's lock"},
		Key{Name: "admins", Kind: Strings, Default: []string{}, Check: CheckActors,
			Help: "actors who may act on anyone's work: merge entries and workspaces, a task another holds (task close --force)"},
		Key{Name: "hooks.verify_on_push", Kind: Bool, Default: false, Help: "pre-push refuses a push when spool verify fails (off: a log problem never stops a push of code; CI runs spool verify)"},
		Key{Name: "hooks.timeout", Kind: Duration, Default: 30 * time.Second, Min: Min(1), Max: Max(600),
			Help: "how long a git hook's own pass may take (recovery, PRD sync and promotion, the pre-push sync); one line says what was cut short"},
	)
}

// Settings are the keys registered here, read once by whoever needs them.
type Settings struct {
	LockTimeout       time.Duration // lock.timeout
	Admins            []string      // admins
	GitHookTimeout    time.Duration // hooks.timeout: a git hook's own pass
	GitHookVerifyPush bool          // hooks.verify_on_push
}

// SettingsFrom reads the keys registered here.
func SettingsFrom(c *Config) Settings {
	return Settings{
		LockTimeout:       c.Duration("lock.timeout"),
		Admins:            c.Strings("admins"),
		GitHookTimeout:    c.Duration("hooks.timeout"),
		GitHookVerifyPush: c.Bool("hooks.verify_on_push"),
	}
}

// Config is the parsed configuration file.
type Config struct {
	path     string
	values   map[string]any // validated, in the kind's Go type
	raw      map[string]json.RawMessage
	problems []string        // values the file has that their key refuses (bounds, checks): their default is used
	read     map[string]bool // the keys read, when tracked (Tracked)
}

// Load reads path; a missing file is an empty configuration.
func Load(path string) (*Config, error) {
	c := &Config{path: path, values: map[string]any{}, raw: map[string]json.RawMessage{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, &c.raw); err != nil {
		return nil, fault.New(CodeConfigInvalid, err, fmt.Sprintf("%s is not a JSON object: %v", path, err))
	}
	for name, raw := range c.raw {
		k, ok := registry[name]
		if !ok {
			continue // a typo, or a newer spool's: Check refuses the first
		}
		v, err := k.parseKind(raw)
		if err != nil {
			return nil, fault.New(CodeConfigInvalid, err, fmt.Sprintf("%s: %s: %v", path, name, err), "key", name)
		}
		// A value of the right type that its key refuses (a bound, a check
		// a newer spool added) falls back to the default, so that no command
		// stops over it, config set included; doctor reports it.
		if err := k.checkValue(v, raw); err != nil {
			c.problems = append(c.problems, fmt.Sprintf("%s: %v (the default, %v, is used)", name, err, Display(k.Default)))
			continue
		}
		c.values[name] = v
	}
	sort.Strings(c.problems)
	return c, nil
}

// Version is the configuration's format as this spool knows it. A file
// that says it is of a later one ("version": N) was written for a newer
// spool: keys this one does not know are then that spool's, ignored with a
// warning, not typos.
const Version = 1

// Unknown lists keys in the file that no one registered, but the version
// and the keys of one's own ("x-" prefixed, which spool never reads).
func (c *Config) Unknown() []string {
	var names []string
	for name := range c.raw {
		if _, ok := registry[name]; !ok && name != "version" && !strings.HasPrefix(name, "x-") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Newer says whether the file was written for a newer spool.
func (c *Config) Newer() bool {
	var v int
	return json.Unmarshal(c.raw["version"], &v) == nil && v > Version
}

// Check refuses a file with a key spool does not know (a typo would be
// silently ignored, and its setting not applied: a misspelt test command
// merges untested code), unless the file says it is for a newer spool.
func (c *Config) Check() error {
	unknown := c.Unknown()
	if len(unknown) == 0 || c.Newer() {
		return nil
	}
	name := unknown[0]
	return fault.New(CodeUnknownConfigKey, nil,
		fmt.Sprintf("%s: unknown key %q%s: fix it, or remove it (spool config unset %s); keys of your own start with \"x-\", and a newer spool's keys come with its \"version\"",
			c.path, name, suggestion(name), name), "file", c.path, "key", name, "unknown", unknown)
}

func unknownKey(name string) error {
	return fault.New(CodeUnknownConfigKey, nil,
		fmt.Sprintf("unknown config key %q%s; spool config list shows every key", name, suggestion(name)), "key", name)
}

// suggestion is " (did you mean K?)" for the registered key K closest to
// name, when one is close enough to be a typo of it.
func suggestion(name string) string {
	best, dist := "", len(name)/3+1
	for _, k := range Keys() {
		if d := editDistance(name, k.Name); d < dist {
			best, dist = k.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Set validates and stores a value given on the command line: text that
// parses as JSON is taken as JSON, anything else as a string. The value must
// pass the key's checks and, with it, every cross-key rule.
func (c *Config) Set(name, text string) error {
	k, ok := registry[name]
	if !ok {
		return unknownKey(name)
	}
	raw := json.RawMessage(text)
	if !json.Valid(raw) {
		raw, _ = json.Marshal(text)
	}
	v, err := k.parseKind(raw)
	if err == nil {
		err = k.checkValue(v, raw)
	}
	if err != nil {
		return fault.New(CodeInvalidConfigValue, err,
			fmt.Sprintf("%s: %v", name, err), "key", name, "kind", string(k.Kind))
	}
	before := map[string]bool{} // rules the file broke already are not this value's fault
	for _, rule := range rules {
		if err := rule(c); err != nil {
			before[err.Error()] = true
		}
	}
	old, had := c.values[name]
	c.values[name] = v
	for _, rule := range rules {
		if err := rule(c); err != nil && !before[err.Error()] {
			if had {
				c.values[name] = old
			} else {
				delete(c.values, name)
			}
			return fault.New(CodeInvalidConfigValue, err,
				fmt.Sprintf("%s: %v", name, err), "key", name, "kind", string(k.Kind))
		}
	}
	var buf bytes.Buffer
	json.Compact(&buf, raw)
	c.raw[name] = buf.Bytes()
	return nil
}

// Defaulted lists the values the file has that their key refuses, each
// replaced by its default; every command warns about them.
func (c *Config) Defaulted() []string { return c.problems }

// Problems lists what the file's values break: each key's checks and the
// cross-key rules (a hand-edited file; Set refuses these). doctor reports them.
func (c *Config) Problems() []string {
	out := append([]string(nil), c.problems...)
	for _, rule := range rules {
		if err := rule(c); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// Unset removes a key, which then takes its default.
func (c *Config) Unset(name string) error {
	if _, ok := registry[name]; !ok {
		if _, inFile := c.raw[name]; !inFile {
			return unknownKey(name)
		}
	}
	delete(c.raw, name)
	delete(c.values, name)
	return nil
}

// Value returns the value of name and whether it was set (else the default).
func (c *Config) Value(name string) (any, bool, error) {
	k, ok := registry[name]
	if !ok {
		return nil, false, unknownKey(name)
	}
	if v, ok := c.values[name]; ok {
		return v, true, nil
	}
	if k.Derived != nil {
		if v, why := k.Derived(c); why != "" {
			return v, false, nil
		}
	}
	return k.Default, false, nil
}

// Why says why an unset key's value is not its default ("" when it is).
func (c *Config) Why(name string) string {
	k, ok := registry[name]
	if _, set := c.values[name]; !ok || set || k.Derived == nil {
		return ""
	}
	_, why := k.Derived(c)
	return why
}

func (c *Config) get(name string) any {
	v, _, err := c.Value(name)
	if err != nil {
		panic(err) // a key the code uses must be registered
	}
	if c.read != nil {
		c.read[name] = true
	}
	return v
}

// Tracked is an empty configuration that records the keys read from it
// (Read): a test runs every settings loader on it to find a key
// registered and never read. Not for concurrent use.
func Tracked() *Config {
	return &Config{values: map[string]any{}, raw: map[string]json.RawMessage{}, read: map[string]bool{}}
}

// Read lists the keys read from a Tracked configuration, sorted.
func (c *Config) Read() []string {
	names := make([]string, 0, len(c.read))
	for n := range c.read {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// The getters below are for the settings loaders (SettingsFrom, PolicyFrom
// in each capability's package), next to where the keys are registered:
// the rest of the code reads the typed fields they fill, so that a key
// misspelt there is a compile error, not a panic at run time.

func (c *Config) Duration(name string) time.Duration { d, _ := c.get(name).(time.Duration); return d }
func (c *Config) Int(name string) int                { n, _ := c.get(name).(int); return n }
func (c *Config) Float(name string) float64          { f, _ := c.get(name).(float64); return f }
func (c *Config) Bool(name string) bool              { b, _ := c.get(name).(bool); return b }
func (c *Config) String(name string) string          { s, _ := c.get(name).(string); return s }
func (c *Config) Strings(name string) []string       { s, _ := c.get(name).([]string); return s }

// Save writes the file atomically, keys sorted, one per line.
func (c *Config) Save() error {
	names := make([]string, 0, len(c.raw))
	for n := range c.raw {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString("{")
	for i, n := range names {
		if i > 0 {
			buf.WriteString(",")
		}
		key, _ := json.Marshal(n)
		fmt.Fprintf(&buf, "\n  %s: %s", key, c.raw[n])
	}
	if len(names) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("}\n")
	return durable.WriteWorkTreeFile(c.path, buf.Bytes(), 0o644)
}

// Display renders a value for people and for JSON output.
func Display(v any) any {
	if d, ok := v.(time.Duration); ok {
		return d.String()
	}
	return v
}

// parse reads a value of the key's kind and checks it.
func (k Key) parse(raw json.RawMessage) (any, error) {
	v, err := k.parseKind(raw)
	if err != nil {
		return nil, err
	}
	return v, k.checkValue(v, raw)
}

// checkValue applies the key's bounds and check to a value of its kind.
func (k Key) checkValue(v any, raw json.RawMessage) error {
	var err error
	switch x := v.(type) {
	case int:
		err = k.checkMin(float64(x), raw)
	case float64:
		err = k.checkMin(x, raw)
	case time.Duration:
		err = k.checkMin(x.Seconds(), raw)
	}
	if err == nil && k.Check != nil {
		err = k.Check(v)
	}
	return err
}

// parseKind reads a value of the key's kind.
func (k Key) parseKind(raw json.RawMessage) (any, error) {
	switch k.Kind {
	case String:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want a string, got %s", raw)
		}
		return s, nil
	case Enum:
		var s string
		if json.Unmarshal(raw, &s) != nil || !contains(k.Enum, s) {
			return nil, fmt.Errorf("want one of %s, got %s", strings.Join(k.Enum, ", "), raw)
		}
		return s, nil
	case Bool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("want true or false, got %s", raw)
		}
		return b, nil
	case Int:
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("want a whole number, got %s", raw)
		}
		return n, nil
	case Float:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("want a number, got %s", raw)
		}
		return f, nil
	case Duration:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want a duration such as 90s, 5m or 1h, got %s", raw)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("want a duration such as 90s, 5m or 1h, got %q", s)
		}
		return d, nil
	case Strings:
		var ss []string
		if err := json.Unmarshal(raw, &ss); err != nil {
			return nil, fmt.Errorf(`want a JSON array of strings such as ["a","b"], got %s`, raw)
		}
		return ss, nil
	}
	return nil, fmt.Errorf("key %s has unknown kind %q", k.Name, k.Kind)
}

// checkMin checks the bounds (the name is older than Max).
func (k Key) checkMin(v float64, raw json.RawMessage) error {
	bound := func(b float64) string {
		if k.Kind == Duration {
			return time.Duration(b * float64(time.Second)).String()
		}
		return fmt.Sprint(b)
	}
	if k.Min != nil && v < *k.Min {
		return fmt.Errorf("want at least %s, got %s", bound(*k.Min), raw)
	}
	if k.Max != nil && v > *k.Max {
		return fmt.Errorf("want at most %s, got %s", bound(*k.Max), raw)
	}
	return nil
}

// Min and Max are helpers for Key.Min and Key.Max.
func Min(v float64) *float64 { return &v }
func Max(v float64) *float64 { return &v }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CheckActors refuses a list of actors with an empty one.
func CheckActors(v any) error {
	for _, a := range v.([]string) {
		if strings.TrimSpace(a) == "" {
			return errors.New("an actor is empty")
		}
	}
	return nil
}
