package main

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spoolhq/spool/projections"
)

// StatusCmd summarises the log.
type StatusCmd struct{}

func (c *StatusCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	v, err := st.Read(e.ctx, "stats")
	if err != nil {
		return err
	}
	stats, _ := projections.As[*projections.Stats](v, projections.StatsSpec.Name)
	writer, err := st.Log.WriterID()
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{
			"root": st.Repo.Root, "writer": writer, "events": stats.Events,
			"by_type": stats.ByType, "by_writer": stats.ByWriter, "last_lc": stats.LastLC, "last_at": stats.LastAt,
		})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "repository\t%s\n", st.Repo.Root)
	fmt.Fprintf(tw, "writer\t%s\n", writer)
	last := "-"
	if stats.LastAt != nil {
		last = stats.LastAt.Format("2006-01-02T15:04:05Z07:00")
	}
	fmt.Fprintf(tw, "events\t%d from %d writers (last lc %d, at %s)\n", stats.Events, len(stats.ByWriter), stats.LastLC, last)
	for _, t := range sortedKeys(stats.ByType) {
		fmt.Fprintf(tw, "  %s\t%d\n", t, stats.ByType[t])
	}
	return tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
