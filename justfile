# spool's everyday tasks; `just --list` shows them. Only Go and git are needed.

# run the tests, as CI does
test:
    go test ./...

# vet and formatting
lint:
    go vet ./...
    test -z "$(gofmt -l $(git ls-files '*.go'))"

# the CI script
ci:
    bash .ci/run

# in-process benchmarks
bench:
    go test -run '^$' -bench . -benchtime 2s ./eventlog/ ./projections/

# the demo on a throwaway repository
demo:
    go run ./cmd/spool demo

# the work queue on 10,000 tasks and 100,000 events: selection benchmarks, then whole-process medians
bench-queue:
    go test -run '^$' -bench . -benchtime 1s ./internal/workqueue/
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench queue -spool "$d/spool" -runs 21; s=$?; rm -rf "$d"; exit $s

# the PRD queue on 100 features × 10 PRDs, built one command at a time: report, sync with nothing changed, promote
bench-prd:
    go test -run '^$' -bench . ./internal/prd/
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench prd -spool "$d/spool" -runs 21; s=$?; rm -rf "$d"; exit $s

# job scheduler: whole-process medians with 10,000 queued jobs, a worker's latencies, the in-process decision
bench-jobs:
    go test -run '^$' -bench . ./internal/jobs/
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench jobs -spool "$d/spool" -runs 21; s=$?; rm -rf "$d"; exit $s

# spool watch on 100,000 events: startup recovery, event-to-action latency (median of 20), idle CPU and RSS over 60 s
bench-watch:
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench watch -spool "$d/spool" -runs 20 -idle 60s; s=$?; rm -rf "$d"; exit $s

# screenshots of every board view at 1400 px and 400 px, light and dark, into dir (needs Chromium); not committed
board-screenshots dir="artifacts/board":
    mkdir -p "{{dir}}" && SPOOL_ARTIFACTS="$(cd "{{dir}}" && pwd)" go test -count=1 -run 'TestBoardInBrowser$' ./cmd/spool/ && ls "{{dir}}"

# spool serve on 10,000 tasks and 1,000 queued jobs: page and API wall times (median of 21), task add → stream → page refresh (median of 50), idle CPU and RSS over 60 s
bench-board:
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench board -spool "$d/spool" -tasks 10000 -jobs 1000 -runs 21 -appends 50 -idle 60s; s=$?; rm -rf "$d"; exit $s

# spool mcp on 10,000 tasks over stdio: ready and next round trips, idle CPU and memory
bench-mcp:
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench mcp -spool "$d/spool" -runs 201 -idle 30s; s=$?; rm -rf "$d"; exit $s

# fleet: a claim through a local bare remote, a sync with nothing new, claims/s with 1, 2, 4, 8 contending clones, an event from one clone to another running watch
bench-fleet:
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench fleet -spool "$d/spool" -tasks 1000 -runs 21 -for 8s -clones 1,2,4,8 -propagate 10s,1s -events 11; s=$?; rm -rf "$d"; exit $s

# fleet at scale: two clones of a scale dataset (just bench-scale artifacts/scale first) sharing its log through a bare remote: the first sync, a fresh clone, a sync sending and receiving one event, a status after a fetch, a claim
bench-fleet-scale dir="artifacts/scale/100000":
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench fleet -spool "$d/spool" -from "{{dir}}" -runs 11; s=$?; rm -rf "$d"; exit $s

# scale: realistic logs (one fsynced append per CLI command) of 1k, 10k and 100k tasks, ~10 events each; a table of every command's median and peak RSS. With dir, the datasets are kept there and reused (e.g. just bench-scale artifacts/scale)
bench-scale dir="":
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench scale -spool "$d/spool" -tasks 1000,10000,100000 -runs 21 -slow-runs 3 -dir "{{dir}}"; s=$?; rm -rf "$d"; exit $s

# merge queue: whole-process medians with 1,000 entries in the log, and the train's own overhead
bench-merge:
    go run ./cmd/spoolbench merge -n 30
    go test -run '^$' -bench . -benchtime 2s ./internal/mergequeue/

# the log: append vs raw write+fsync, replay of 1,000,000 events (time, peak RSS), status on 100,000
bench-foundation:
    go test -run '^$' -bench 'Append|Read' -benchtime 2s -count 3 ./eventlog/
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench gen -dir "$d/1m" -events 1000000 && "$d/spool" -C "$d/1m" init >/dev/null && go run ./cmd/spoolbench time -n 5 -warmup 1 -- "$d/spool" -C "$d/1m" replay && go run ./cmd/spoolbench gen -dir "$d/100k" -events 100000 && "$d/spool" -C "$d/100k" init >/dev/null && "$d/spool" -C "$d/100k" status >/dev/null && go run ./cmd/spoolbench time -n 31 -- "$d/spool" -C "$d/100k" status; s=$?; rm -rf "$d"; exit $s

# signed events: signing and checking one event per key type, task add without and with a key, verify --signatures over 10,000 signed events
bench-sign:
    go test -run '^$' -bench . ./internal/sign/
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./cmd/spoolbench sign -spool "$d/spool" -runs 21; s=$?; rm -rf "$d"; exit $s
