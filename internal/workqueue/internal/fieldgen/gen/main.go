// Command gen writes the fields_gen.go of the package in the current
// directory (go generate in internal/workqueue): see package fieldgen.
package main

import (
	"fmt"
	"os"

	"github.com/spoolhq/spool/internal/workqueue/internal/fieldgen"
)

func main() {
	if err := fieldgen.Main("."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
