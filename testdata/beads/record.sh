#!/bin/sh
# Drives a beads client's argv through "bd" (real bd 0.49.1, or spool under
# the name bd) and records what it prints: the golden files spool's bd front
# end is compared with (cmd/spool/bd_golden_test.go). Run in an empty git
# repository whose user.name, user.email and $BD_ACTOR all differ (bd's
# created_by is the actor, its owner the email), where bd (or spool) is
# initialized, with "bd" on PATH:
#   git init -q -b main && git config user.name 'Ada Lovelace' &&
#   git config user.email ada@example.com && export BD_ACTOR=ada &&
#   bd init --quiet --prefix bd && sh record.sh OUTDIR
# with bd's daemon, which bd starts (its errors are those a client meets;
# stop it afterwards). bd-0.49.1/ was recorded so, with bd built from the
# v0.49.1 tag with CGO_ENABLED=0.
# Files NAME.json are --json output (compared key by key), NAME.txt the text
# a person or a prompt reads (compared line by line once ids and dates are
# made neutral).
set -eu
out=$1
run() { # run NAME ARGS...: stdout to OUTDIR/NAME, and the exit status to OUTDIR/NAME.status
	name=$1
	shift
	set +e
	bd "$@" >"$out/$name" 2>/dev/null
	echo $? >"$out/$name.status"
	set -e
}
fails() { # fails NAME ARGS...: stderr to OUTDIR/NAME.stderr, the exit status to OUTDIR/NAME.status
	name=$1
	shift
	set +e
	bd "$@" >/dev/null 2>"$out/$name.stderr"
	echo $? >"$out/$name.status"
	set -e
}
id() { tr -d ' \n' | sed -n 's/^{"id":"\([^"]*\)".*/\1/p'; } # bd prints it compact or indented

bd create 'Write the parser' -p 1 -t feature -l backend,automated -d 'Parse the config file.' --json >"$out/create.json"
A=$(id <"$out/create.json")
B=$(bd create 'Ship it' --deps "$A" --silent)
E=$(bd create 'Epic' -t epic --silent)
C=$(bd create 'Child of the epic' --parent "$E" -p 0 --silent)
D=$(bd create 'Old work' -p 3 -t chore --silent)
F=$(bd create 'Finished epic' -t epic --silent)
G=$(bd create 'Its only child' --parent "$F" --design 'One step.' --acceptance 'It is done.' --silent)
printf 'A=%s\nB=%s\nE=%s\nC=%s\nD=%s\nF=%s\nG=%s\n' "$A" "$B" "$E" "$C" "$D" "$F" "$G" >"$out/ids"

run comment-add.json comments add "$A" 'Started on the lexer' --json
run update-notes.json update "$B" --notes 'after the parser' --json
run close.json close "$D" --reason 'done already' --json
run close-child.json close "$G" --json
run update-claim.json update "$C" --status in_progress --assignee agent-1 --json
run label-add.json label add "$A" urgent --json
run label-remove.json label remove "$A" urgent --json
run label-list.json label list "$A" --json
run dep-add.json dep add "$B" "$E" --json
run dep-remove.json dep remove "$B" "$E" --json
run dep-remove-missing.json dep remove "$B" "$E" --json
fails dep-remove-missing dep remove "$B" "$E"
run ready.json ready --json --limit 0
run ready-label.json ready --json --limit 0 --label automated
run ready-unassigned.json ready --json --unassigned
run list.json list --json --all
run list-open.json list --json
run show.json show "$A" "$B" "$E" "$C" "$D" --json
run comments.json comments "$A" --json
run epic-close-eligible.json epic close-eligible --dry-run --json
run show-missing.json show nope-404 --json
fails show-missing show nope-404
run update-blocked.json update "$B" --status blocked --json
run show-blocked.json show "$B" --json
run update-open.json update "$B" --status open --json
run reopen.json reopen "$D" --json
run epic-close.json epic close-eligible --json

# Text, as prompts and scripts read it.
txt() { # txt NAME ARGS...: stdout to OUTDIR/NAME.txt, the exit status to OUTDIR/NAME.txt.status
	name=$1
	shift
	set +e
	bd "$@" >"$out/$name.txt" 2>/dev/null
	echo $? >"$out/$name.txt.status"
	set -e
}
txt create create 'Triage the crash' -p 3 -t bug -d 'Seen on start.'
H=$(sed -n 's/^✓ Created issue: //p' "$out/create.txt")
printf 'H=%s\n' "$H" >>"$out/ids"
txt dep-add-related dep add "$H" "$A" --type related
run dep-add-discovered.json dep add "$H" "$D" --type discovered-from --json
txt dep-add-blocks dep add "$B" "$H"
txt show show "$A" "$B" "$H"
run show-typed.json show "$H" "$B" --json
txt show-child show "$C" "$G"
txt show-epic show "$E"
txt dep-tree dep tree "$B"
run dep-tree.json dep tree "$B" --json
txt dep-tree-up dep tree "$A" --direction up
txt dep-remove dep remove "$B" "$H"
txt list list
txt list-all list --all
txt ready ready
txt blocked blocked
run blocked.json blocked --json
txt stats stats
run stats.json stats --json
txt comments comments "$A"
txt comment-add comments add "$H" 'Reproduced on main'
txt label-add label add "$H" triage
txt label-list label list "$A"
txt label-list-all label list-all
run label-list-all.json label list-all --json
txt update update "$H" --priority 1
txt close close "$H" --reason 'not a bug'
txt reopen reopen "$H"
txt epic-status epic status
run epic-status.json epic status --json
txt search search parser
run search.json search parser --json
bd export -o "$out/export.jsonl" >/dev/null 2>&1

# bd's other views, and quick capture: after the export, which they would change.
run children.json children "$E" --json
txt children children "$E"
run list-parent.json list --parent "$E" --all --json
# bd's daemon leaves count's groups in a map's order; bd alone (--no-daemon) sorts them.
run count.json count --json --no-daemon
run count-open.json count --status open --json --no-daemon
run count-by-status.json count --by-status --json --no-daemon
run count-by-label.json count --by-label --json --no-daemon
txt count count --no-daemon
txt count-by-priority count --by-priority --no-daemon
txt count-by-assignee count --by-assignee --no-daemon
fails count-two-groups count --by-status --by-type --no-daemon
run types.json types --json
run stale.json stale --json
txt stale stale
sleep 1 # every issue updated before this second: stale --days 0 lists them all
run stale-all.json stale --days 0 --json
txt stale-open stale --days 0 --status open
fails stale-bad-status stale --status closed
Q=$(bd q 'Quick capture' -p 1 -t bug -l triage)
printf 'Q=%s\n' "$Q" >>"$out/ids"
run show-quick.json show "$Q" --json
