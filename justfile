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
    d=$(mktemp -d) && CGO_ENABLED=0 go build -o "$d/spool" ./cmd/spool && go run ./internal/benchqueue -spool "$d/spool" -runs 21; s=$?; rm -rf "$d"; exit $s

# merge queue: whole-process medians with 1,000 entries in the log, and the train's own overhead
bench-merge:
    go run ./internal/benchmerge -n 30
    go test -run '^$' -bench . -benchtime 2s ./internal/mergequeue/
