package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/fleet"
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
	synced, err := fleet.SyncStatus(e.ctx, st, stats.ByWriter)
	if err != nil {
		return err
	}
	quarantined, err := st.Log.Quarantined()
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{
			"root": st.Repo.Root, "log": st.Log.Dir(), "writer": writer, "events": stats.Events,
			"by_type": stats.ByType, "by_writer": stats.ByWriter, "last_lc": stats.LastLC, "last_at": stats.LastAt,
			"sync": synced, "quarantined": nonNil(quarantined),
		})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "repository\t%s\n", st.Repo.Root)
	fmt.Fprintf(tw, "log\t%s\n", relTo(st.Repo.Root, st.Log.Dir()))
	fmt.Fprintf(tw, "writer\t%s\n", writer)
	last := "-"
	if stats.LastAt != nil {
		last = stats.LastAt.Format("2006-01-02T15:04:05Z07:00")
	}
	fmt.Fprintf(tw, "events\t%d from %d writers (last lc %d, at %s)\n", stats.Events, len(stats.ByWriter), stats.LastLC, last)
	for _, t := range sortedKeys(stats.ByType) {
		fmt.Fprintf(tw, "  %s\t%d\n", t, stats.ByType[t])
	}
	fmt.Fprintf(tw, "sync\t%s\n", syncLine(synced))
	if len(quarantined) > 0 {
		fmt.Fprintf(tw, "quarantine\t%d copies of writer files kept aside, not folded (spool doctor lists them)\n", len(quarantined))
	}
	return tw.Flush()
}

// syncLine says how far the log is from the remote, as last synced.
func syncLine(s fleet.Status) string {
	remote := s.Remote + "/" + s.Branch
	switch {
	case s.Remote == "":
		return "no remote: the log is committed on the local branch " + s.Branch + " (spool sync)"
	case !s.Synced:
		return "never synced with " + remote
	case *s.Ahead == 0 && *s.Behind == 0:
		return fmt.Sprintf("up to date with %s (as of the last sync)", remote)
	}
	return fmt.Sprintf("ahead of %s by %d, behind by %d (events, as of the last sync)", remote, *s.Ahead, *s.Behind)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// relTo is path relative to root when it is under it.
func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}
