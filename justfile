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

# merge queue: whole-process medians with 1,000 entries in the log, and the train's own overhead
bench-merge:
    go run ./internal/benchmerge -n 30
    go test -run '^$' -bench . -benchtime 2s ./internal/mergequeue/
