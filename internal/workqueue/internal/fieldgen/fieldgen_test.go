package fieldgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The package's own declarations generate (TestFieldsGenerated in
// internal/workqueue compares the output with fields_gen.go); a field
// declared and left out of the table, or a TaskJSON field nothing sets, or
// a type the appenders have no code for, is refused with its name.
func TestGenerateRefusesWhatItWouldDrop(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "state.go"))
	if err != nil {
		t.Fatal(err)
	}
	json, err := os.ReadFile(filepath.Join("..", "..", "json.go"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := os.ReadFile(filepath.Join("..", "..", "events.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, old, new, want string
	}{
		{"state.go", "\tCloseReason string\n", "\tCloseReason string\n\tRisk string\n", "TaskDetail.Risk is neither in fieldgen's table"},
		{"state.go", "\tParent     string\n", "\tParent     string\n\tSize int\n", "Task.Size is neither in fieldgen's table"},
		{"state.go", "\tDesign      string\n", "\tDesign      []byte\n", "TaskDetail.Design is declared []byte, the table says string"},
		{"json.go", "\tNotes              string        `json:\"notes,omitempty\"`\n", "\tNotes              string        `json:\"notes,omitempty\"`\n\tRisk string `json:\"risk\"`\n", "TaskJSON.Risk: no field of the table sets it"},
		{"json.go", "\tWorker         string     `json:\"worker,omitempty\"`\n", "\tWorker         string     `json:\"worker,omitempty\"`\n\tCost float64 `json:\"cost\"`\n", "EntryJSON.Cost: float64"},
	} {
		dir := t.TempDir()
		files := map[string][]byte{"state.go": src, "json.go": json, "events.go": events}
		if !strings.Contains(string(files[c.file]), c.old) {
			t.Fatalf("%s no longer holds %q: update this test", c.file, c.old)
		}
		files[c.file] = []byte(strings.Replace(string(files[c.file]), c.old, c.new, 1))
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %q: got %v, want an error saying %q", c.file, strings.TrimSpace(c.new), err, c.want)
		}
	}
}
