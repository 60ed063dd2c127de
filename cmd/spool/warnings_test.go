package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
)

// docs/errors.md names every warning code --json can show: each is given
// where its warning arises (fault.RegisterWarning), not read from its text.
func TestWarningCodesDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := fault.WarningCodes()
	if len(codes) < 2 {
		t.Fatalf("warning codes %v: want warning and torn_tail_repaired at least", codes)
	}
	for _, c := range codes {
		if !strings.Contains(string(b), "`"+c.Name+"`") {
			t.Errorf("docs/errors.md does not name the warning code %s", c.Name)
		}
	}
}
