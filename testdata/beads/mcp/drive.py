"""Runs every method of beads-mcp's BdCliClient (beads v0.49.1) against a bd.

Usage: python3 drive.py BD DIR. Each step prints one line: its name, then
"ok" or the exception's class (and, for a failed command, the first words
of the reason the MCP server passes on: bd's stderr). cmd/spool/bd_mcp_test.go compares the lines.
"""

import asyncio
import sys

from beads_mcp.bd_client import BdCliClient
from beads_mcp.models import (
    AddDependencyParams, BlockedParams, CloseIssueParams, CreateIssueParams, InitParams,
    ListIssuesParams, ReadyWorkParams, ReopenIssueParams, ShowIssueParams, UpdateIssueParams,
)


async def main(bd, workdir):
    c = BdCliClient(bd_path=bd, working_dir=workdir, actor="mcp-agent", no_auto_flush=True, no_auto_import=True)
    got = {}

    async def step(name, coro):
        try:
            got[name] = await coro
            print(name, "ok")
        except Exception as e:  # noqa: BLE001 - the class is the result
            detail = ""
            msg = getattr(e, "stderr", "") or ""
            if msg.startswith("Error: "):  # why, as the MCP server tells the agent
                detail = " " + msg[len("Error: "):].split(":")[0]
            print(name, type(e).__name__ + detail)
        return got.get(name)

    await step("init", c.init(InitParams(prefix="mcp")))
    a = await step("create", c.create(CreateIssueParams(
        title="First", description="What is wrong.", design="How.", acceptance="Done when.", priority=1,
        issue_type="bug", assignee="bob", labels=["backend", "urgent"], external_ref="gh-12")))
    b = await step("create --deps", c.create(CreateIssueParams(title="Second", deps=[a.id])))
    await step("create --id", c.create(CreateIssueParams(title="Third", id="mcp-42")))
    await step("ready", c.ready(ReadyWorkParams(
        limit=5, priority=1, assignee="bob", labels=["backend"], labels_any=["urgent"], sort_policy="priority")))
    await step("ready --unassigned --parent", c.ready(ReadyWorkParams(unassigned=True, parent_id=a.id)))
    await step("list", c.list_issues(ListIssuesParams(
        status="open", priority=1, issue_type="bug", assignee="bob", labels=["backend"], labels_any=["urgent"],
        query="Fir", limit=5)))
    await step("list (an issue with dependencies)", c.list_issues(ListIssuesParams(unassigned=True)))
    await step("show", c.show(ShowIssueParams(issue_id=b.id)))
    await step("update", c.update(UpdateIssueParams(
        issue_id=a.id, status="in_progress", priority=0, assignee="bob", title="First, renamed", description="D.",
        design="G.", acceptance_criteria="A.", notes="N.", external_ref="gh-13")))
    await step("dep add --type related", c.add_dependency(AddDependencyParams(
        issue_id=b.id, depends_on_id=a.id, dep_type="related")))
    await step("stats", c.stats())
    await step("blocked", c.blocked())
    await step("blocked --parent", c.blocked(BlockedParams(parent_id=a.id)))
    await step("close", c.close(CloseIssueParams(issue_id=a.id, reason="Fixed")))
    await step("reopen", c.reopen(ReopenIssueParams(issue_ids=[a.id], reason="Not yet")))
    await step("quickstart", c.quickstart())
    await step("migrate --inspect", c.inspect_migration())
    await step("info --schema", c.get_schema_info())
    await step("repair-deps", c.repair_deps())
    await step("repair-deps --fix", c.repair_deps(fix=True))
    await step("detect-pollution", c.detect_pollution())
    await step("detect-pollution --clean", c.detect_pollution(clean=True))
    await step("validate", c.validate())
    await step("validate --checks --fix-all", c.validate(checks="orphans,duplicates", fix_all=True))
    ext = (await c.show(ShowIssueParams(issue_id=a.id))).external_ref
    print("external_ref", ext)


asyncio.run(main(sys.argv[1], sys.argv[2]))
