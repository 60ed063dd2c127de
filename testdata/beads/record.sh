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
id() { sed -n 's/^{"id":"\([^"]*\)".*/\1/p'; }

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
bd export -o "$out/export.jsonl" >/dev/null 2>&1
