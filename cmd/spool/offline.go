package main

import "github.com/alecthomas/kong"

// OfflineFlag is --offline, on the commands that can take a claim through
// the git remote (sync.claims): next, heartbeat, done, fail, the merge
// commands (each recovers entries whose runner died first), the job
// worker's commands, PRD promotion, watch, the board and the MCP server.
// Other commands never claim, so their help does not list it.
type OfflineFlag struct {
	Offline bool `help:"Claim locally when the git remote cannot be reached (claims go through it: sync.claims), with a warning."`
}

// AfterApply hands the flag to the env: every command's store is opened
// with Globals.Offline (env.remoteClaims). The tree parsed is CLI, or the
// struct of its globals and one command (internal/kongtree): both hold Globals.
func (o *OfflineFlag) AfterApply(kctx *kong.Context) error {
	if g := kctx.Model.Target.FieldByName("Globals"); g.IsValid() {
		if p, ok := g.Addr().Interface().(*Globals); ok {
			p.Offline = o.Offline
		}
	}
	return nil
}
