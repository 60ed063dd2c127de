#!/bin/sh
# Records what only real bd 0.49.1 exports, for spool import to read
# (testdata/script/export_import.txtar): a tombstone (an issue bd deleted)
# and an issue in a status spool does not have (hooked; bd 0.49.1 turns an
# issue updated to pinned into hooked at once, so pinned is not here). Run as
# record.sh (its header has the setup), with real bd on PATH:
#   sh record-deleted.sh bd-0.49.1-deleted.jsonl
set -eu
out=$1
A=$(bd create 'Kept' -p 1 --silent)
D=$(bd create 'Deleted' --silent)
bd dep add "$A" "$D" >/dev/null
bd comments add "$D" 'About to go' >/dev/null
bd delete "$D" --force >/dev/null
H=$(bd create 'Hooked' --silent)
bd update "$H" --status hooked >/dev/null
bd export -o "$out" >/dev/null 2>&1
