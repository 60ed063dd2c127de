package bdcli

import (
	"fmt"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/fault"
)

// bd's commands that beads' MCP server and Claude Code plugin run and that
// spool refuses, each with why and what to use instead: exit 1, bd's error
// shape. None is accepted and ignored.

// CodeNotSupported is a bd command or flag the bd front end refuses,
// saying why and what to use instead.
var CodeNotSupported = fault.Register(fault.Usage, "not_supported")

// notSupported is the refusal of a bd command or flag.
func notSupported(what, why string) error {
	return fault.New(CodeNotSupported, nil, fmt.Sprintf("%s: not supported by spool: %s", what, why), "command", what)
}

// bdRefusals are the refused commands, by name: why, and what to use.
var bdRefusals = map[string]string{
	"migrate":       "spool has no database schema to migrate (bd migrate --inspect shows the empty plan); its projections are rebuilt from the log (spool replay)",
	"delete":        "the log is append-only and keeps every issue; close it instead (bd close ID --reason ...)",
	"edit":          "it opens $EDITOR, which blocks an agent; use bd update ID --title/--description/--design/--notes/--acceptance",
	"rename-prefix": "ids are recorded in the log's events; new issues take ids.prefix (spool config set ids.prefix P), and spool export --prefix P renames an export",
	"sync":          "spool shares its log itself: spool sync, spool watch, or git push with spool hooks install; an agent needs none of them",
	"daemon":        "spool has no daemon: every command reads the log; spool watch does the background work",
	"daemons":       "spool has no daemon: every command reads the log; spool watch does the background work",
	"compact":       "the log keeps every event and projections keep reads fast; there is nothing to compact",
	"admin":         "bd's admin commands (compact, cleanup, reset) manage bd's database; spool's log keeps every event (spool doctor, spool verify)",
	"restore":       "nothing is compacted; bd show ID and spool log -s ID have the whole history",
	"template":      "spool has no issue templates; give the fields to bd create",
	"audit":         "spool log lists every event with who made it; spool append TYPE records your own",
}

// bdRefusedCmd is one refused command: it takes any arguments and flags,
// and refuses.
type bdRefusedCmd struct {
	Args []string `arg:"" optional:"" passthrough:""`
}

func (c *bdRefusedCmd) Run(b *bdEnv, kctx *kong.Context) error {
	name := kctx.Selected().Name
	return notSupported("bd "+name, bdRefusals[name])
}
