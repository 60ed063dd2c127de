package main

// docs/reference/ (cli.md, config.md, events.md, errors.md) is generated
// from the code by internal/reference; TestReferenceDocs fails when the
// checked-in files are stale.
//go:generate go test -run ^TestReferenceDocs$ . -update
