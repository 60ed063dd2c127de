package main

// One example per command: kong shows a command's Help as the detail of
// spool COMMAND --help, and docs/reference/cli.md shows it too.

// example is a command's help detail: one example of its use.
func example(line string) string { return "Example:\n  $ " + line }

func (*InitCmd) Help() string {
	return example("spool init && git add .spool && git commit -m 'spool: init'")
}
func (*DemoCmd) Help() string   { return example("spool demo") }
func (*StatusCmd) Help() string { return example("spool status") }
func (*TaskAddCmd) Help() string {
	return example("spool task add 'Fix the login redirect' -p 1 -l bug --dep sp-4mx5")
}
func (*TaskShowCmd) Help() string { return example("spool task show sp-4mx5") }
func (*TaskListCmd) Help() string { return example("spool task list --status open -l bug") }
func (*TaskUpdateCmd) Help() string {
	return example("spool task update sp-4mx5 -p 0 --add-label urgent")
}
func (*TaskCloseCmd) Help() string {
	return example("spool task close sp-4mx5 sp-9k2p -r 'done in abc123'")
}
func (*TaskReopenCmd) Help() string { return example("spool task reopen sp-4mx5") }
func (*TaskDepAddCmd) Help() string {
	return example("spool task dep add sp-9k2p sp-4mx5     # sp-9k2p waits for sp-4mx5")
}
func (*TaskDepRmCmd) Help() string { return example("spool task dep rm sp-9k2p sp-4mx5") }
func (*TaskCommentCmd) Help() string {
	return example("spool task comment sp-4mx5 'the fixture was stale'")
}
func (*ReadyCmd) Help() string     { return example("spool ready -n 5 -l bug") }
func (*NextCmd) Help() string      { return example("spool next -w agent-1 --wait --timeout 10m") }
func (*HeartbeatCmd) Help() string { return example("spool heartbeat sp-4mx5") }
func (*DoneCmd) Help() string      { return example("spool done sp-4mx5") }
func (*FailCmd) Help() string {
	return example("spool fail sp-4mx5 --error 'tests failing: TestLogin'")
}
func (*RetryCmd) Help() string   { return example("spool retry sp-4mx5") }
func (*BlockCmd) Help() string   { return example("spool block sp-4mx5 --reason 'waits for the vendor'") }
func (*UnblockCmd) Help() string { return example("spool unblock sp-4mx5 --reset-attempts") }
func (*HistoryCmd) Help() string { return example("spool history sp-4mx5") }
func (*StatsCmd) Help() string   { return example("spool stats --json") }
func (*MergeSubmitCmd) Help() string {
	return example("spool merge submit --priority 1     # from the branch's worktree")
}
func (*MergeListCmd) Help() string     { return example("spool merge list --all") }
func (*MergeShowCmd) Help() string     { return example("spool merge show 3") }
func (*MergePositionCmd) Help() string { return example("spool merge position 3") }
func (*MergeCancelCmd) Help() string {
	return example("spool merge cancel 3 --reason 'superseded by entry 4'")
}
func (*MergeRetryCmd) Help() string    { return example("spool merge retry 3") }
func (*MergeFreezeCmd) Help() string   { return example("spool merge freeze --reason 'release 1.4'") }
func (*MergeUnfreezeCmd) Help() string { return example("spool merge unfreeze") }
func (*MergeRunCmd) Help() string      { return example("spool merge run --once") }
func (*JobSubmitCmd) Help() string {
	return example("spool job submit --name train --segments 4 -- python train.py")
}
func (*JobListCmd) Help() string    { return example("spool job list --all") }
func (*JobShowCmd) Help() string    { return example("spool job show job-5yfx") }
func (*JobExplainCmd) Help() string { return example("spool job explain job-5yfx") }
func (*JobEditCmd) Help() string {
	return example("spool job edit job-5yfx --priority background --off-peak")
}
func (*JobMoveCmd) Help() string   { return example("spool job move job-5yfx --top") }
func (*JobCancelCmd) Help() string { return example("spool job cancel job-5yfx") }
func (*JobPauseCmd) Help() string  { return example("spool job pause job-5yfx") }
func (*JobResumeCmd) Help() string { return example("spool job resume job-5yfx") }
func (*JobRetryCmd) Help() string  { return example("spool job retry job-5yfx") }
func (*JobStatsCmd) Help() string  { return example("spool job stats --since 30d --chart") }
func (*JobQuotaSetCmd) Help() string {
	return example("spool job quota set --user ada@example.com --daily 8h")
}
func (*JobQuotaListCmd) Help() string    { return example("spool job quota list") }
func (*JobQuotaRmCmd) Help() string      { return example("spool job quota rm --user ada@example.com") }
func (*JobScheduleListCmd) Help() string { return example("spool job schedule list") }
func (*JobScheduleRmCmd) Help() string   { return example("spool job schedule rm sched-2k9d") }
func (*JobWorkerCmd) Help() string       { return example("spool job worker --slots 2 --name gpu-box") }
func (*JobClaimCmd) Help() string        { return example("spool job claim --slots 1 --name gpu-box") }
func (*JobSegmentDoneCmd) Help() string {
	return example("spool job segment-done job-5yfx 0 --exit-code 0 --name gpu-box")
}
func (*JobFinishCmd) Help() string {
	return example("spool job finish job-5yfx --status complete --name gpu-box")
}
func (*JobHeartbeatCmd) Help() string { return example("spool job heartbeat job-5yfx --name gpu-box") }
func (*PRDStartCmd) Help() string {
	return example("spool prd start 2026-02-26--checkout --worker-cap 2")
}
func (*PRDAddCmd) Help() string {
	return example("spool prd add 2026-02-26--checkout checkout-api --path docs/prd/checkout-api.md")
}
func (*PRDDiscoverCmd) Help() string { return example("spool prd discover checkout-api") }
func (*PRDSubmitCmd) Help() string   { return example("spool prd submit checkout-api") }
func (*PRDApproveCmd) Help() string  { return example("spool prd approve checkout-api --gate prd") }
func (*PRDSyncCmd) Help() string     { return example("spool prd sync 2026-02-26--checkout") }
func (*PRDPromoteCmd) Help() string  { return example("spool prd promote") }
func (*PRDRetryCmd) Help() string    { return example("spool prd retry checkout-api") }
func (*PRDCheckCmd) Help() string    { return example("spool prd check") }
func (*PRDReportCmd) Help() string   { return example("spool prd report 2026-02-26--checkout") }
func (*PRDShowCmd) Help() string     { return example("spool prd show checkout-api") }
func (*PRDListCmd) Help() string     { return example("spool prd list") }
func (*PRDRemoveCmd) Help() string {
	return example("spool prd remove checkout-api --feature 2026-02-26--checkout")
}
func (*PRDApplyUpdatesCmd) Help() string { return example("spool prd apply-updates updates.json") }
func (*WatchCmd) Help() string {
	return example("spool watch            # or, from cron: spool watch --once")
}
func (*OrchestratorStatusCmd) Help() string { return example("spool orchestrator status") }
func (*OrchestratorResumeCmd) Help() string { return example("spool orchestrator resume") }
func (*PlanApplyCmd) Help() string          { return example("spool plan apply plan.json") }
func (*PlanFeedbackCmd) Help() string       { return example("spool plan feedback proposal.json") }
func (*PlanBuildCmd) Help() string          { return example("spool plan build plan-7q2c") }
func (*PlanRebuildCmd) Help() string        { return example("spool plan rebuild plan-7q2c") }
func (*PlanListCmd) Help() string           { return example("spool plan list") }
func (*PlanShowCmd) Help() string           { return example("spool plan show plan-7q2c") }
func (*PlanProposalsCmd) Help() string      { return example("spool plan proposals --all") }
func (*PlanApproveCmd) Help() string        { return example("spool plan approve proposal-3m8x") }
func (*PlanRejectCmd) Help() string {
	return example("spool plan reject proposal-3m8x --reason 'out of scope'")
}
func (*FeedbackAddCmd) Help() string {
	return example("spool feedback add 'the checkout page times out on mobile'")
}
func (*FeedbackListCmd) Help() string { return example("spool feedback list --all") }
func (*MCPServeCmd) Help() string     { return example("spool mcp serve --tools read") }
func (*MCPInstallCmd) Help() string   { return example("spool mcp install claude") }
func (*SyncCmd) Help() string         { return example("spool sync") }
func (*ServeCmd) Help() string        { return example("spool serve --open") }
func (*SignStartCmd) Help() string    { return example("spool sign start") }
func (*ExportCmd) Help() string       { return example("spool export -o issues.jsonl") }
func (*ImportCmd) Help() string       { return example("spool import issues.jsonl") }
func (*BDCmd) Help() string           { return example("spool bd ready --json") }
func (*ConfigGetCmd) Help() string    { return example("spool config get merge.test_command") }
func (*ConfigSetCmd) Help() string {
	return example("spool config set merge.test_command '[\"go\",\"test\",\"./...\"]'")
}
func (*ConfigUnsetCmd) Help() string    { return example("spool config unset merge.test_command") }
func (*ConfigListCmd) Help() string     { return example("spool config list") }
func (*DoctorCmd) Help() string         { return example("spool doctor --repair") }
func (*HooksInstallCmd) Help() string   { return example("spool hooks install") }
func (*HooksUninstallCmd) Help() string { return example("spool hooks uninstall") }
func (*HooksStatusCmd) Help() string    { return example("spool hooks status") }
func (*LogCmd) Help() string            { return example("spool log -t 'task.*' -s sp-4mx5 --since 2h") }
func (*VerifyCmd) Help() string         { return example("spool verify --signatures") }
func (*ReplayCmd) Help() string         { return example("spool replay") }
func (*VersionCmd) Help() string        { return example("spool version") }
func (*CompletionCmd) Help() string     { return example("source <(spool completion bash)") }
func (*AppendCmd) Help() string {
	return example("spool append deploy.finished -s web -d '{\"version\":\"1.4.2\"}'")
}
