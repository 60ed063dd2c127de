package main

import "github.com/alecthomas/kong"

// bulkOutput marks a command that prints what it read and nothing else:
// no child process shares its output, and it does not wait between
// lines. Its standard output is buffered and written when it returns (a
// follow mode flushes what it has at each wait: log -f). Unbuffered, a
// table of 100,000 tasks was 760,000 writes, a line or a cell's padding
// each, and spool log of a million events 12 million.
type bulkOutput interface{ bulkOutput() }

func (*TaskListCmd) bulkOutput()        {}
func (*TaskShowCmd) bulkOutput()        {}
func (*ReadyCmd) bulkOutput()           {}
func (*HistoryCmd) bulkOutput()         {}
func (*StatsCmd) bulkOutput()           {}
func (*StatusCmd) bulkOutput()          {}
func (*LogCmd) bulkOutput()             {}
func (*ExportCmd) bulkOutput()          {}
func (*JobListCmd) bulkOutput()         {}
func (*JobShowCmd) bulkOutput()         {}
func (*JobExplainCmd) bulkOutput()      {}
func (*JobStatsCmd) bulkOutput()        {}
func (*JobQuotaListCmd) bulkOutput()    {}
func (*JobScheduleListCmd) bulkOutput() {}
func (*MergeListCmd) bulkOutput()       {}
func (*MergeShowCmd) bulkOutput()       {}
func (*PRDListCmd) bulkOutput()         {}
func (*PRDShowCmd) bulkOutput()         {}
func (*PRDReportCmd) bulkOutput()       {}
func (*PlanListCmd) bulkOutput()        {}
func (*PlanShowCmd) bulkOutput()        {}
func (*PlanProposalsCmd) bulkOutput()   {}
func (*FeedbackListCmd) bulkOutput()    {}
func (*ConfigListCmd) bulkOutput()      {}
func (*HooksStatusCmd) bulkOutput()     {}
func (*CompletionCmd) bulkOutput()      {}

// bulk says whether the command kctx runs is a bulkOutput.
func bulk(kctx *kong.Context) bool {
	n := kctx.Selected()
	if n == nil || !n.Target.CanAddr() {
		return false
	}
	_, ok := n.Target.Addr().Interface().(bulkOutput)
	return ok
}
