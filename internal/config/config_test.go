package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		text string
		want any // nil: refused
	}{
		{Key{Kind: String}, "hello", "hello"},
		{Key{Kind: String}, "42", nil}, // JSON 42 is a number, not a string
		{Key{Kind: Enum, Enum: []string{"a", "b"}}, "b", "b"},
		{Key{Kind: Enum, Enum: []string{"a", "b"}}, "c", nil},
		{Key{Kind: Bool}, "true", true},
		{Key{Kind: Bool}, "yes", nil},
		{Key{Kind: Int}, "3", 3},
		{Key{Kind: Int}, "1.5", nil},
		{Key{Kind: Int, Min: Min(1)}, "0", nil},
		{Key{Kind: Float}, "2.5", 2.5},
		{Key{Kind: Float, Min: Min(1)}, "0.5", nil},
		{Key{Kind: Duration}, "90s", 90 * time.Second},
		{Key{Kind: Duration}, "5 minutes", nil},
		{Key{Kind: Duration}, "-1s", nil},
		{Key{Kind: Strings}, `["go","test"]`, []string{"go", "test"}},
		{Key{Kind: Strings}, `go test`, nil},
		{Key{Kind: Strings}, `[1,2]`, nil},
	} {
		raw := json.RawMessage(tc.text)
		if !json.Valid(raw) {
			raw, _ = json.Marshal(tc.text) // as Set does: not JSON means a string
		}
		got, err := tc.key.parse(raw)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s %q: accepted as %v, want refused", tc.key.Kind, tc.text, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: got %v, %v; want %v", tc.key.Kind, tc.text, got, err, tc.want)
		}
	}
}

func TestSetUnsetSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Duration("lock.timeout"); got != 10*time.Second {
		t.Fatalf("default lock.timeout = %v", got)
	}
	for _, tc := range []struct{ key, text, code string }{
		{"no.such.key", "1", "unknown_config_key"},
		{"lock.timeout", "soon", "invalid_config_value"},
		{"hooks.verify_on_push", "maybe", "invalid_config_value"},
	} {
		err := c.Set(tc.key, tc.text)
		if f, ok := fault.As(err); !ok || f.Code != tc.code || f.Kind != fault.Usage {
			t.Errorf("Set(%s, %s) = %v, want usage error %s", tc.key, tc.text, err, tc.code)
		}
	}
	if err := c.Set("lock.timeout", "30s"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("hooks.verify_on_push", "false"); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := "{\n  \"hooks.verify_on_push\": false,\n  \"lock.timeout\": \"30s\"\n}\n"; string(b) != want {
		t.Fatalf("saved\n%s\nwant\n%s", b, want)
	}
	c, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration("lock.timeout") != 30*time.Second || c.Bool("hooks.verify_on_push") {
		t.Fatalf("reloaded values wrong")
	}
	if err := c.Unset("lock.timeout"); err != nil {
		t.Fatal(err)
	}
	if c.Duration("lock.timeout") != 10*time.Second {
		t.Fatalf("unset did not restore the default")
	}
	// A hand-edited file with an ill-typed known key is an environment error.
	os.WriteFile(path, []byte(`{"lock.timeout": 5}`), 0o644)
	if _, err := Load(path); err == nil {
		t.Fatal("ill-typed file accepted")
	} else if f, _ := fault.As(err); f == nil || f.Kind != fault.Environment {
		t.Fatalf("ill-typed file: %v, want an environment error", err)
	}
}
