package main

import (
	"fmt"
	"io"
)

// startUsage is what bare spool prints: what spool is, the commands to
// start with, and where the rest is listed.
const startUsage = `spool keeps a team's work queues as an event log in its git repository:
tasks and their dependencies, a merge queue, jobs and PRDs, shared through git.

Start with:
  spool demo                     see it work in a throwaway repository
  spool init                     set spool up in this git repository
  spool task add TITLE           create a task (--dep ID: it waits for another)
  spool ready                    list what next could claim now, most urgent first
  spool next                     claim the most urgent one
  spool done ID, spool fail ID   record how the attempt went
  spool merge submit             queue this branch for the merge train
  spool serve                    see every queue on the board, in a browser

spool --help lists every command; spool COMMAND --help its flags.
`

// printStartUsage prints startUsage for spool run with no arguments.
func printStartUsage(w io.Writer) int {
	fmt.Fprint(w, startUsage)
	return 0
}
