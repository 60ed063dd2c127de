package main

import (
	"fmt"
	"sort"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// CompleteCmd lists the values of a kind for the completion scripts: task
// ids, merge entries, config keys. It prints nothing rather than fail, and
// never waits for the log's lock (reads do not).
type CompleteCmd struct {
	Kind string `arg:"" enum:"task,merge-entry,config-key" help:"What to list."`
}

func (c *CompleteCmd) Run(e *env) error {
	values := c.values(e)
	sort.Strings(values)
	for _, v := range values {
		fmt.Fprintln(e.stdout, v)
	}
	return nil
}

func (c *CompleteCmd) values(e *env) []string {
	if c.Kind == "config-key" {
		var keys []string
		for _, k := range config.Keys() {
			keys = append(keys, k.Name)
		}
		return keys
	}
	e.stderr = discard{} // a completion must not print warnings into the shell
	st, err := e.open()
	if err != nil {
		return nil
	}
	switch c.Kind {
	case "task":
		v, err := st.Read(e.ctx, workqueue.IDsName)
		if err != nil {
			return nil
		}
		ids, _ := projections.As[*workqueue.IDsProjection](v, workqueue.IDsName)
		return ids.IDs()
	case "merge-entry":
		v, err := st.Read(e.ctx, mergequeue.Name)
		if err != nil {
			return nil
		}
		var out []string
		q, _ := projections.As[*mergequeue.State](v, mergequeue.Name)
		for _, en := range q.Active() {
			out = append(out, fmt.Sprint(en.ID))
		}
		return out
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
