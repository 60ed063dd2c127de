package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBeadsMCPClient runs beads' own MCP client (integrations/beads-mcp's
// BdCliClient, beads v0.49.1, copied unmodified into testdata/beads/mcp)
// against spool installed as bd: every method, with the argv the MCP
// server runs and its pydantic models decoding the answers. It needs
// python3 with pydantic and pydantic-settings, and is skipped without them.
//
// Four steps fail, each as it fails against bd 0.49.1 or by design: stats
// and a list with an issue that has dependencies fail the client's own
// models on bd 0.49.1's answers, which spool gives (beads-mcp reads them
// from 0.49.2 and 0.56.1); create --id and detect-pollution --clean are
// refused by spool.
func TestBeadsMCPClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if out, err := exec.Command(python, "-c", "import pydantic, pydantic_settings").CombinedOutput(); err != nil {
		t.Skipf("no pydantic or pydantic-settings: %s", out)
	}
	binDir := t.TempDir()
	bd := filepath.Join(binDir, "bd")
	if err := os.Symlink(spoolBinary(t), bd); err != nil {
		t.Fatal(err)
	}
	mcp, err := filepath.Abs(filepath.Join("..", "..", "testdata", "beads", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.Command(python, filepath.Join(mcp, "drive.py"), bd, work)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PYTHONPATH="+mcp, "PYTHONDONTWRITEBYTECODE=1", "BEADS_PATH="+bd,
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(work), "BD_ACTOR=", "BEADS_ACTOR=", "SPOOL_ACTOR=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drive.py: %v\n%s", err, out)
	}
	want := `init ok
create ok
create --deps ok
create --id BdCommandError create --id
ready ok
ready --unassigned --parent ok
list ok
list (an issue with dependencies) ValidationError
show ok
update ok
dep add --type related ok
stats ValidationError
blocked ok
blocked --parent ok
close ok
reopen ok
quickstart ok
migrate --inspect ok
info --schema ok
repair-deps ok
repair-deps --fix ok
detect-pollution ok
detect-pollution --clean BdCommandError detect-pollution --clean
validate ok
validate --checks --fix-all ok
external_ref gh-13
`
	if got := string(out); got != want {
		t.Errorf("beads-mcp's client against spool as bd:\n%s\nwant:\n%s", got, want)
	}
}
