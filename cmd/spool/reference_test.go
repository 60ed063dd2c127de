package main

import (
	"path/filepath"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/bdcli"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/reference"
)

// docs/reference/ is generated from the code: the command line from kong's
// model of CLI, the configuration keys from the config registry, the event
// types from internal/*/events.go, the error codes from the fault registry.
// The files are regenerated here and compared with the checked-in ones;
// go generate ./cmd/spool (this test with -update) rewrites them.
func TestReferenceDocs(t *testing.T) {
	t.Parallel()
	parser, err := kong.New(&CLI{}, kong.Name("spool"))
	if err != nil {
		t.Fatal(err)
	}
	bd, err := bdcli.New(kong.Name("spool bd"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := reference.Events(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"cli.md":    reference.CLI(parser.Model),
		"bd.md":     reference.BD(bd.Model),
		"config.md": reference.Config(config.Keys()),
		"events.md": events,
		"errors.md": reference.Errors(fault.Codes()),
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("..", "..", "docs", "reference", name), append(b, '\n'), "go generate ./cmd/spool")
		})
	}
}
