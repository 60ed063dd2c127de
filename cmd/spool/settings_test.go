package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
	"github.com/spoolhq/spool/internal/workqueue"
)

// Every registered key is read by a settings loader: a key registered and
// read by none is a setting that does nothing (and its docs a lie).
func TestEveryConfigKeyIsLoaded(t *testing.T) {
	t.Parallel()
	cfg := config.Tracked()
	config.SettingsFrom(cfg)
	store.SettingsFrom(cfg)
	workqueue.SettingsFrom(cfg)
	mergequeue.SettingsFrom(cfg)
	fleet.SettingsFrom(cfg)
	jobs.PolicyFrom(cfg)
	orchestrator.PolicyFrom(cfg)
	plans.SettingsFrom(cfg)
	watch.SettingsFrom(cfg)
	board.SettingsFrom(cfg)
	sign.SettingsFrom(cfg)
	// Keys read otherwise, and why.
	elsewhere := map[string]string{
		"sign.exempt": "read from the commit that brings .spool/allowed_signers (sign's trust.go), never from the configuration in force",
	}
	read := map[string]bool{}
	for _, name := range cfg.Read() {
		read[name] = true
	}
	for _, k := range config.Keys() {
		if !read[k.Name] && elsewhere[k.Name] == "" {
			t.Errorf("config key %s is registered but no settings loader reads it: read it in its package's SettingsFrom (or PolicyFrom), and add the loader here", k.Name)
		}
	}
	for name := range elsewhere {
		if read[name] {
			t.Errorf("config key %s is read by a loader now: take it off the list of keys read elsewhere", name)
		}
	}
}

// Code reads the settings' fields, never a key by name: a getter called
// with a key is in a settings loader (a config.go or settings.go, next to
// where the keys are registered), so that a misspelt key elsewhere is a
// compile error, not a panic at run time.
func TestConfigKeysAreReadByLoadersOnly(t *testing.T) {
	t.Parallel()
	getter := regexp.MustCompile(`\.(String|Strings|Int|Float|Bool|Duration)\("[a-z_][a-z_.]*"\)`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "config.go" || name == "settings.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := getter.FindString(line); m != "" {
				t.Errorf("%s:%d: %s reads a config key by name: read a field of its package's Settings (SettingsFrom) instead", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
