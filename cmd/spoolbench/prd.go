package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// prdMain measures the PRD queue on a repository built the way people build
// it, one spool command (and one append) at a time: features × prds PRDs,
// half of them approved and promoted. Then it times whole processes of
// `spool prd report --json` and `spool prd sync` with nothing changed:
//
//	spoolbench prd -spool BIN [-features 100] [-prds 10] [-runs 21] [-dir DIR]
func prdMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench prd", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	features := fs.Int("features", 100, "feature runs")
	prds := fs.Int("prds", 10, "PRDs per feature run")
	runs := fs.Int("runs", 21, "timed runs per command")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	start := time.Now()
	b, dir, env, cleanup, err := benchRepo(*bin, *keep, "spool-bench-prd-", "bench@spool.invalid")
	defer cleanup()
	if err != nil {
		return err
	}
	spool := func(args ...string) error {
		_, err := run(dir, env, b, args...)
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "docs", "prd"), 0o755); err != nil {
		return err
	}
	body := strings.Repeat("A paragraph of requirements, as long as a real PRD's paragraphs are.\n\n", 40)
	for f := range *features {
		feature := fmt.Sprintf("2026-11-23--feature-%03d", f)
		if err := spool("prd", "start", feature); err != nil {
			return err
		}
		for p := range *prds {
			slug := fmt.Sprintf("%s--prd-%02d", feature, p)
			gate := "pending"
			if p%2 == 0 {
				gate = "approved"
			}
			doc := fmt.Sprintf("---\ntitle: PRD %d of feature %d\nprd_approval: %s\nbeads_approval: %s\n---\n# PRD %s\n\n%s## Open Questions\n\n- None\n",
				p, f, gate, gate, slug, body)
			if err := os.WriteFile(filepath.Join(dir, "docs", "prd", slug+".md"), []byte(doc), 0o644); err != nil {
				return err
			}
			if err := spool("prd", "add", feature, slug); err != nil {
				return err
			}
			if err := spool("prd", "submit", slug); err != nil {
				return err
			}
		}
	}
	if err := spool("prd", "promote"); err != nil {
		return err
	}
	fmt.Printf("dataset: %d features × %d PRDs in %s (built in %s)\n", *features, *prds, dir, time.Since(start).Round(time.Millisecond))
	printLoad()
	return timeCommands(b, dir, env, *runs, [][]string{
		{"version"},
		{"prd", "report", "--json"},
		{"prd", "sync"},
		{"prd", "promote"},
		{"prd", "list", "--json"},
	})
}
