// Command benchgen makes a spool repository with a synthetic log, for the
// whole-process timings in README.md:
//
//	go run ./internal/benchgen -dir /tmp/big -events 1000000 -writers 2
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spoolhq/spool/eventlog"
)

func main() {
	dir := flag.String("dir", "", "directory to create the repository in (must not exist)")
	events := flag.Int("events", 100_000, "number of events in all")
	writers := flag.Int("writers", 2, "number of writer files")
	flag.Parse()
	if err := run(*dir, *events, *writers); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func run(dir string, events, writers int) error {
	if dir == "" || writers < 1 {
		return fmt.Errorf("-dir is required and -writers must be at least 1")
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	eventsDir := filepath.Join(dir, ".spool", "events")
	for w := 0; w < writers; w++ {
		n := events / writers
		if w < events%writers {
			n++
		}
		if err := eventlog.Generate(eventsDir, fmt.Sprintf("bench%02d", w), n, w+1, writers); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d events in %d writer files\n", dir, events, writers)
	return nil
}
