package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
)

// browserLatency is append → page as a person sees it: the board's Tasks
// view open in headless Chromium (filtered to one label, so that each new
// card is within the column's first 200), then n times `spool task add`
// with that label in another process, timed from just before the process
// starts to the card being in the page's DOM (the script's debounce and
// refetch included).
func browserLatency(base, bin, dir string, env []string, n int) error {
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		fmt.Println("append → page in a browser: skipped (no chromium on PATH)")
		return nil
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first action starts the browser on ctx itself: a browser started
	// on a derived context would close when that context ends.
	if err := chromedp.Do(ctx); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	open, done := context.WithTimeout(ctx, 30*time.Second)
	err := chromedp.Do(open, chromedp.Navigate(base+"/tasks?label=bench-page"), chromedp.WaitVisible(`#live.on`))
	done()
	if err != nil {
		return fmt.Errorf("open the board in chromium: %w", err)
	}
	var lat []time.Duration
	for i := range n {
		title := fmt.Sprintf("page bench %d", i+1)
		// The page resolves when a card with the title is in the DOM; the
		// promise is set up before the task is added.
		seen := make(chan error, 1)
		var at float64
		wait, stop := context.WithTimeout(ctx, 20*time.Second)
		go func() {
			var err error
			at, err = chromedp.Run(wait, chromedp.Evaluate[float64](fmt.Sprintf(`new Promise(resolve => {
				const has = () => [...document.querySelectorAll('[data-col="ready"] .title')].some(e => e.textContent === %q);
				const obs = new MutationObserver(() => { if (has()) { obs.disconnect(); resolve(Date.now()); } });
				obs.observe(document.body, {childList: true, subtree: true});
			})`, title), chromedp.EvalAwaitPromise))
			seen <- err
		}()
		time.Sleep(20 * time.Millisecond) // the observer is in place
		start := time.Now()
		cmd := exec.Command(bin, "-C", dir, "task", "add", title, "-l", "bench-page")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			stop()
			return fmt.Errorf("task add: %v\n%s", err, out)
		}
		err := <-seen
		stop()
		if err != nil {
			return fmt.Errorf("%q never showed on the page: %w", title, err)
		}
		lat = append(lat, time.UnixMilli(int64(at)).Sub(start))
		time.Sleep(150 * time.Millisecond)
	}
	slices.Sort(lat)
	fmt.Printf("task add → its card on the open page (chromium):   %s  (%d runs, to the millisecond)\n", spread(lat), n)
	return nil
}
