package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
)

// SignCmd is what signing needs beyond keys and .spool/allowed_signers.
type SignCmd struct {
	Start SignStartCmd `cmd:"" help:"Record that the events the log has now are from before signing, so verify --signatures asks no signature of them; commit it with .spool/allowed_signers."`
}

// SignStartCmd sets sign.exempt to every writer's last seq: verify
// --signatures asks no signature of those events, read from the commit
// that first brings .spool/allowed_signers.
type SignStartCmd struct{}

func (c *SignStartCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	tails, err := st.Log.Tails()
	if err != nil {
		return err
	}
	exempt := []string{}
	for _, t := range tails {
		if t.Seq > 0 {
			exempt = append(exempt, t.Writer+":"+strconv.FormatUint(t.Seq, 10))
		}
	}
	value, _ := json.Marshal(exempt)
	if err := changeConfig(e, "sign.exempt", func(cfg *config.Config) error { return cfg.Set("sign.exempt", string(value)) }); err != nil {
		return err
	}
	if !e.JSON {
		fmt.Fprintf(e.stdout, "sign.exempt: %s (%d events from before signing)\n", strings.Join(exempt, ", "), events(tails))
		fmt.Fprintln(e.stdout, "commit .spool/config.json with .spool/allowed_signers: that commit is trusted on first use")
	}
	return nil
}

func events(tails []eventlog.Tail) (n uint64) {
	for _, t := range tails {
		n += t.Seq
	}
	return n
}
