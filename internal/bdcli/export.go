package bdcli

// bd export -o FILE and bd import -i FILE: spool export and spool import
// (Host), with bd's flags.

type bdExportCmd struct {
	Output string `short:"o" help:"Write to this file rather than stdout."`
	Status string `short:"s" help:"Refused: not supported by spool."`
}

func (c *bdExportCmd) Run(b *bdEnv) error {
	if c.Status != "" {
		return notSupported("export --status", "bd export through spool writes every issue; filter the lines, e.g. jq -c 'select(.status == \"open\")'")
	}
	return b.host.Export(c.Output)
}

type bdImportCmd struct {
	Input        string `short:"i" default:"-" help:"The JSONL file to read; - (the default) reads stdin."`
	DryRun       bool   `name:"dry-run" help:"Refused: not supported by spool."`
	SkipExisting bool   `name:"skip-existing" help:"Refused: not supported by spool."`
	Strict       bool   `help:"Refused: not supported by spool."`
}

func (c *bdImportCmd) Run(b *bdEnv) error {
	if c.DryRun || c.SkipExisting || c.Strict {
		return notSupported("import --dry-run, --skip-existing and --strict",
			"spool import checks the whole file first (a bad line refuses it all, with its number) and then records each issue that differs from the tracker, whole; run it as it is")
	}
	if b.cli.Readonly {
		return bdUsage("operation blocked: --readonly mode")
	}
	return b.host.Import(c.Input)
}
