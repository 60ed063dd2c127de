package main

import (
	"context"
	"io"
	"path/filepath"
	"runtime/debug"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/bdcli"
	"github.com/spoolhq/spool/internal/store"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// spool's beads front end (internal/bdcli) runs as "spool bd ARGS", or as
// ARGS when spool is invoked as bd or br (a symlink, runAsBeads): here is
// only how spool hands it a command line and its environment.

// BDCmd is spool bd: every argument after "bd" is bd's.
type BDCmd struct {
	Args []string `arg:"" optional:"" help:"bd's command and flags (spool bd help lists them)."`
}

func (c *BDCmd) Run(e *env, kctx *kong.Context) error {
	args := c.Args
	if e.JSON {
		args = append([]string{"--json"}, args...)
	}
	// spool's --actor given on the command line wins over $BD_ACTOR; from
	// $SPOOL_ACTOR it comes after it.
	actor := ""
	for _, p := range kctx.Path {
		if p.Flag != nil && p.Flag.Name == "actor" {
			actor = e.Globals.Actor
		}
	}
	if code := bdcli.Run(e.ctx, "bd", args, bdOptions(e.Globals.Dir, actor, e.stdout, e.stderr, e.storeOpts)); code != 0 {
		panic(exitPanic(code)) // bd's status, already reported in bd's words
	}
	return nil
}

// asBeads reports whether spool was invoked as bd or br.
func asBeads(argv0 string) (string, bool) {
	name := filepath.Base(argv0)
	return name, name == "bd" || name == "br"
}

// bdOptions are what the bd front end gets from spool: dir is -C, actor
// spool's --actor when given on its command line, opts main's store
// options.
func bdOptions(dir, actor string, stdout, stderr io.Writer, opts []store.Option) bdcli.Options {
	version := func() string {
		v, _ := buildVersion(debug.ReadBuildInfo())
		return v
	}
	return bdcli.Options{Dir: dir, Actor: actor, Stdout: stdout, Stderr: stderr, Version: version, Store: opts,
		Host: func(ctx context.Context, s bdcli.Session) bdcli.Host {
			g := &Globals{Dir: dir, Actor: s.Actor, JSON: s.JSON}
			return bdHost{&env{Globals: g, ctx: ctx, stdout: s.Stdout, stderr: s.Stderr, lastActor: s.LastActor, storeOpts: opts}}
		}}
}

// bdHost is a bd command line's env, as the bd front end uses it
// (bdcli.Host); Warn is env's.
type bdHost struct{ *env }

func (h bdHost) Workqueue() (*wqservice.Service, error) { return h.workqueue() }
func (h bdHost) OpenLenient() (*store.Store, error)     { return h.openLenient() }
func (h bdHost) Export(output string) error             { return exportTasks(h.env, output, "") }
func (h bdHost) Import(file string) error               { return importTasks(h.env, file, "") }

func (h bdHost) ImportFrom(r io.Reader) (int, error) {
	n, _, err := importFrom(h.env, r, "")
	return n, err
}
