#!/bin/sh
# A fake planning agent for the tests: spool plan build runs it with the
# plan as JSON on stdin. The first argument picks what it does:
#   ok         print a valid PRD update proposal (for the plan in SPOOL_PLAN_ID)
#   arch       print one that updates an "architecture" section
#   fail       print to stderr and exit 1
#   malformed  print JSON that is not a proposal
#   sleep      sleep 30 seconds (for orchestrator.planner_timeout)
# A second argument names a file to copy stdin (the plan) to.
if [ -n "$2" ]; then cat > "$2"; else cat > /dev/null; fi
case "$1" in
ok)
	printf '{"section_updates":[{"section":"overview","content":"Plan %s is built.","change_log_entry":"built %s"}]}\n' "$SPOOL_PLAN_ID" "$SPOOL_PLAN_ID"
	;;
arch)
	printf '{"section_updates":[{"section":"architecture","content":"One binary.","change_log_entry":"architecture for %s"}]}\n' "$SPOOL_PLAN_ID"
	;;
fail)
	echo "planner: the model is unavailable" >&2
	exit 1
	;;
malformed)
	echo '{"section_updates":[{"section":"overview"'
	;;
sleep)
	sleep 30
	;;
*)
	echo "fakeplanner: unknown mode $1" >&2
	exit 2
	;;
esac
