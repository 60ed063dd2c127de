package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMain times spool mcp over stdio on the work queue's dataset (10,000
// tasks, 100,000 events), as a client sees it: the round trip of a tools/call
// of ready and of next (each claims a task), the first call after the
// start (projections loaded) apart, then the idle server's CPU and memory:
//
//	spoolbench mcp -spool BIN [-tasks N] [-events N] [-runs N] [-idle 30s]
func mcpMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench mcp", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	tasks := fs.Int("tasks", 10_000, "tasks to create")
	events := fs.Int("events", 100_000, "events in the log, task.created included")
	runs := fs.Int("runs", 201, "calls of each tool")
	idle := fs.Duration("idle", 30*time.Second, "how long to watch the idle server")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	bin2, dir, env, cleanup, err := queueDataset(*bin, *tasks, *events, *keep)
	if err != nil {
		return err
	}
	defer cleanup()
	cmd := exec.Command(bin2, "mcp")
	cmd.Dir, cmd.Env = dir, env
	ctx := context.Background()
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "spoolbench", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	fmt.Printf("spool mcp: started and initialized in %.1f ms\n", ms(time.Since(start)))
	claimed := 0
	call := func(name string) (time.Duration, error) {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		d := time.Since(t0)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: %v", name, res.StructuredContent)
		}
		if err == nil && name == "next" {
			var claim struct{ ID string }
			raw, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(raw, &claim) == nil && claim.ID != "" {
				claimed++
			}
		}
		return d, err
	}
	for _, name := range []string{"ready", "next"} {
		first, err := call(name)
		if err != nil {
			return err
		}
		var ds []time.Duration
		for range *runs {
			d, err := call(name)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		fmt.Printf("tools/call %-5s round trip: median %6.2f ms (min %6.2f, p90 %6.2f, max %6.2f; %d calls; the first %6.1f ms)\n",
			name, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)*9/10]), ms(ds[len(ds)-1]), len(ds), ms(first))
	}
	fmt.Printf("next claimed %d tasks in %d calls\n", claimed, *runs+1)
	pid := cmd.Process.Pid
	rss, hwm := memory(pid)
	fmt.Printf("spool mcp after the calls: VmRSS %d KiB, VmHWM %d KiB\n", rss, hwm)
	time.Sleep(2 * time.Second)
	cpu0, err := cpuTime(pid)
	if err != nil {
		return err
	}
	time.Sleep(*idle)
	cpu1, err := cpuTime(pid)
	if err != nil {
		return err
	}
	rss, hwm = memory(pid)
	fmt.Printf("idle spool mcp over %s: CPU %s (%.3f%% of a core), VmRSS %d KiB, VmHWM %d KiB\n",
		*idle, cpu1-cpu0, 100*float64(cpu1-cpu0)/float64(*idle), rss, hwm)
	return nil
}
