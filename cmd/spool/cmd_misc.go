package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/completion"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
)

var errVerifyFailed = fault.New(CodeVerifyFailed, nil, "verify failed")

// version is set with -ldflags "-X main.version=..." for releases; otherwise
// it comes from the build info that go build and go install record.
var version = "dev"

// VersionCmd prints the version.
type VersionCmd struct{}

// buildVersion is the version, and the VCS revision the binary was built
// from (with "+dirty" for uncommitted changes), as the build info says.
func buildVersion(info *debug.BuildInfo, ok bool) (v, revision string) {
	v = version
	if !ok {
		return v, ""
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				defer func() { revision += "+dirty" }()
			}
		}
	}
	return v, revision
}

func (c *VersionCmd) Run(e *env) error {
	v, revision := buildVersion(debug.ReadBuildInfo())
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"version": v, "revision": revision, "go": runtime.Version(), "envelope": eventlog.Version})
	}
	rev := ""
	if revision != "" {
		rev = ", revision " + revision
	}
	fmt.Fprintf(e.stdout, "spool %s (%s%s, event envelope v%d)\n", v, runtime.Version(), rev, eventlog.Version)
	return nil
}

// CompletionCmd prints a completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (c *CompletionCmd) Run(e *env) error {
	return completion.Write(e.stdout, e.app.Model, c.Shell)
}

// MergeDriverCmd is git's merge driver for writer files: spool merge-driver %O %A %B.
type MergeDriverCmd struct {
	Base   string `arg:"" help:"Common ancestor (%O)."`
	Ours   string `arg:"" help:"Our version (%A); the result is written here."`
	Theirs string `arg:"" help:"Their version (%B)."`
}

func (c *MergeDriverCmd) Run(e *env) error {
	ours, err := os.ReadFile(c.Ours)
	if err != nil {
		return err
	}
	theirs, err := os.ReadFile(c.Theirs)
	if err != nil {
		return err
	}
	merged, err := eventlog.Union(ours, theirs)
	if err != nil {
		return fault.New(CodeMergeFailed, err, fmt.Sprintf("merge %s: %v", filepath.Base(c.Ours), err))
	}
	return durable.WriteFile(c.Ours, merged, 0o644)
}
