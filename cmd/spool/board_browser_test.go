package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/spoolhq/spool/internal/jobs"
)

// The board end to end: spool serve on a real repository, driven in
// headless Chromium as a person would use it, with every change made
// either on the page or by the CLI in another process. Screenshots of each
// view go to $SPOOL_ARTIFACTS (CI keeps them) or the test's temp dir.

// browserPath finds Chromium; under CI=true its absence fails the test.
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH: .ci/run installs Debian's chromium; the board's browser test cannot run")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium); CI=true makes this a failure")
	return ""
}

// browser starts headless Chromium for the test; it ends with the test.
func browser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1500, 1000),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Chromium's own temp files (a singleton socket it does not always
		// remove) in the test's directory, not /tmp; its profile stays
		// chromedp's, which removes it when Chromium's helpers are gone.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot start Chromium: %v", err)
		}
		t.Skipf("cannot start Chromium: %v", err)
	}
	// An alert would mean a title ran as script.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.Errorf("the page opened a dialog (%q): something ran as script", ev.Message)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx
}

// browse runs browser actions, at most 20 s.
func browse(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs a browser action that returns a value, at most 20 s.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// pageText reads an element's text in one step in the page: a live update
// re-renders <main> and can replace a node between a query and a read.
func pageText(t *testing.T, ctx context.Context, what, sel string) string {
	t.Helper()
	return pageRead(t, ctx, what, sel, "innerText")
}

// pageRead is pageText for any string property of the element (outerHTML).
func pageRead(t *testing.T, ctx context.Context, what, sel, prop string) string {
	t.Helper()
	return value(t, ctx, what, chromedp.Evaluate[string](fmt.Sprintf(
		`new Promise(ok => { const f = () => { const e = document.querySelector(%q); e ? ok(e[%q]) : setTimeout(f, 50) }; f() })`, sel, prop),
		chromedp.EvalAwaitPromise))
}

// click clicks like a pointer, again if a live re-render replaced the node
// between finding it and clicking it.
func click(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	var err error
	for range 5 {
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = chromedp.Do(c, chromedp.Click(sel))
		cancel()
		// Chromium words the node's going in two ways.
		if err == nil || !strings.Contains(err.Error(), "No node with given id") && !strings.Contains(err.Error(), "Could not find node with given id") {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// screenshot saves the page as NAME.png among the artifacts.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SPOOL_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, "board-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// serveURL waits for spool serve's login URL on its output.
func serveURL(t *testing.T, w *jobWorker) (base, login string) {
	t.Helper()
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?code=\w+`)
	waitFor(t, 20*time.Second, "spool serve to print its login URL", func() bool { return re.MatchString(w.output()) })
	m := re.FindStringSubmatch(w.output())
	return m[1], m[0]
}

func taskID(t *testing.T, out string) string {
	t.Helper()
	var task struct{ ID string }
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.ID == "" {
		t.Fatalf("not a task: %v\n%s", err, out)
	}
	return task.ID
}

func TestBoardInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	jobSpool(t, bin, dir, env, "config", "set", "scheduler.admins", `["ada@example.com"]`)
	jobSpool(t, bin, dir, env, "task", "add", "write the docs", "-l", "docs")
	broken := taskID(t, jobSpool(t, bin, dir, env, "--json", "task", "add", "broken build", "-p", "0"))
	jobSpool(t, bin, dir, env, "next")
	jobSpool(t, bin, dir, env, "fail", broken, "-e", `<img src=x onerror=alert(2)>`)
	evil := taskID(t, jobSpool(t, bin, dir, env, "--json", "task", "add", "<script>alert(1)</script>", "-p", "0"))
	stuck := taskID(t, jobSpool(t, bin, dir, env, "--json", "task", "add", "flaky deploy", "-p", "1"))
	jobSpool(t, bin, dir, env, "block", stuck, "--reason", "waits for the vendor")
	var jobIDs []string
	for _, name := range []string{"train", "eval", "report"} {
		jobIDs = append(jobIDs, submitJob(t, bin, dir, env, "--name", name, "--", "/bin/true"))
	}

	srv := startSpool(t, bin, dir, env, "serve", "serve", "--addr", "127.0.0.1:0")
	base, login := serveURL(t, srv)

	// A write without the token is refused, from the browser as from curl.
	browse(t, ctx, "open the board", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(`#main`))
	status := value(t, ctx, "a write without the token",
		chromedp.Evaluate[int](fmt.Sprintf(`fetch("/api/tasks/%s/unblock", {method: "POST"}).then(r => r.status)`, stuck), chromedp.EvalAwaitPromise))
	if status != 401 {
		t.Errorf("POST unblock without the token: status %d, want 401", status)
	}
	if n := len(jobEvents(t, bin, dir, env, "task.unblocked")); n != 0 {
		t.Fatalf("a refused write appended %d task.unblocked", n)
	}

	// The login URL hands the token to the page and sets the read cookie;
	// the page goes live.
	browse(t, ctx, "log in", chromedp.Navigate(login), chromedp.WaitVisible(`#live.on`))
	leakedCookiesWriteNothing(t, ctx, base, stuck)

	// The blocked task is in the Blocked column; the title with a script
	// tag is shown as text.
	blockedCard := fmt.Sprintf(`[data-col="blocked"] [data-task="%s"]`, stuck)
	browse(t, ctx, "find the blocked task", chromedp.WaitVisible(blockedCard))
	screenshot(t, ctx, "tasks")
	if reason := pageText(t, ctx, "read the reason", blockedCard+` .reason`); reason != "blocked: waits for the vendor" {
		t.Errorf("the blocked card says %q, want the reason it was blocked for", reason)
	}
	title := pageText(t, ctx, "read a title", fmt.Sprintf(`[data-task="%s"] .title`, evil))
	lastError := pageText(t, ctx, "read an error", fmt.Sprintf(`[data-task="%s"] .error-text`, broken))
	if title != "<script>alert(1)</script>" {
		t.Errorf("the title shows as %q, want the text <script>alert(1)</script>", title)
	}
	if lastError != "<img src=x onerror=alert(2)>" {
		t.Errorf("the failure shows as %q, want the text <img src=x onerror=alert(2)>", lastError)
	}

	// A live update keeps what the user was doing: a ticked box, text
	// typed into a filter, and the focus there.
	click(t, ctx, "tick reset attempts", blockedCard+` input[name="reset_attempts"]`)
	// Typed as a person types: to the field that has focus, which a live
	// update replacing the node keeps.
	click(t, ctx, "focus the label filter", `input[name="label"]`)
	browse(t, ctx, "type into the label filter", chromedp.KeyEvent("doc"))
	before := value(t, ctx, "read the page's version", chromedp.Evaluate[string](`document.body.dataset.version || "0"`))
	jobSpool(t, bin, dir, env, "task", "add", "a change while the user works")
	browse(t, ctx, "a live update", chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.body.dataset.version || "0") !== %q`, before)))
	state := value(t, ctx, "read the form state", chromedp.Evaluate[[]any](fmt.Sprintf(
		`[document.querySelector('%s input[name="reset_attempts"]').checked, document.querySelector('input[name="label"]').value, document.activeElement.name]`, blockedCard)))
	if len(state) != 3 || state[0] != true || state[1] != "doc" || state[2] != "label" {
		t.Errorf("after a live update: reset attempts ticked, label filter, focus = %v, want [true doc label]", state)
	}

	// Unblock moves it to Ready, through task.unblocked in the log, with
	// the box as the user left it.
	click(t, ctx, "unblock", blockedCard+` button.unblock`)
	browse(t, ctx, "the unblocked task in Ready", chromedp.WaitVisible(fmt.Sprintf(`[data-col="ready"] [data-task="%s"]`, stuck)))
	if evs := jobEvents(t, bin, dir, env, "task.unblocked"); len(evs) != 1 || evs[0].Subject != stuck || !strings.Contains(string(evs[0].Data), `"reset_attempts":true`) {
		t.Fatalf("task.unblocked events: %+v, want one for %s with reset_attempts true", evs, stuck)
	}

	// An append by another process shows on the open page.
	start := time.Now()
	added := taskID(t, jobSpool(t, bin, dir, env, "--json", "task", "add", "added from the CLI"))
	browse(t, ctx, "the CLI's task on the page", chromedp.WaitVisible(fmt.Sprintf(`[data-col="ready"] [data-task="%s"]`, added)))
	t.Logf("task add to the card on the page: %s", time.Since(start).Round(time.Millisecond))

	// Drag the last job to the top: spool job list has it first.
	browse(t, ctx, "open jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(`#live.on`))
	screenshot(t, ctx, "jobs")
	last, first := jobIDs[len(jobIDs)-1], jobIDs[0]
	from := value(t, ctx, "find the last row", chromedp.Evaluate[[]float64](fmt.Sprintf(
		`(r => [r.left + r.width/2, r.top + r.height/2])(document.querySelector('tr[data-job="%s"] td.grip').getBoundingClientRect())`, last)))
	to := value(t, ctx, "find the first row", chromedp.Evaluate[[]float64](fmt.Sprintf(
		`(r => [r.left + r.width/2, r.top + 3])(document.querySelector('tr[data-job="%s"]').getBoundingClientRect())`, first)))
	left := func(p *input.DispatchMouseEventParams) { p.Button = input.MouseButtonLeft; p.Buttons = 1 }
	browse(t, ctx, "drag",
		chromedp.MouseEvent(chromedp.MousePressed, from[0], from[1], left, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, from[0], (from[1]+to[1])/2, left),
		chromedp.MouseEvent(chromedp.MouseMoved, to[0], to[1], left),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-job="%s"].drop-before`, first)),
	)
	screenshot(t, ctx, "jobs-drag")
	browse(t, ctx, "drop", chromedp.MouseEvent(chromedp.MouseReleased, to[0], to[1], left, chromedp.ClickCount(1)))
	waitFor(t, 10*time.Second, "spool job list to put "+last+" first", func() bool {
		var rows []struct{ ID string }
		json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "job", "list")), &rows)
		return len(rows) == len(jobIDs) && rows[0].ID == last
	})
	browse(t, ctx, "the page follows the move", chromedp.WaitVisible(fmt.Sprintf(`#jobq tbody tr:first-child[data-job="%s"]`, last)))

	// Cancel is final: the first click asks, only the second cancels.
	cancel := fmt.Sprintf(`tr[data-job="%s"] form[data-api$="/cancel"] button`, jobIDs[1])
	click(t, ctx, "cancel once", cancel)
	browse(t, ctx, "the cancel asks", chromedp.WaitVisible(cancel+`.armed`))
	if n := len(jobEvents(t, bin, dir, env, "job.cancelled")); n != 0 {
		t.Fatalf("one click on Cancel cancelled (%d job.cancelled)", n)
	}
	click(t, ctx, "confirm the cancel", cancel+`.armed`)
	waitFor(t, 10*time.Second, "job.cancelled", func() bool { return len(jobEvents(t, bin, dir, env, "job.cancelled")) == 1 })

	// The keyboard reorders too: select the second row, K moves it up.
	browse(t, ctx, "the page follows the cancel", chromedp.WaitNotPresent(fmt.Sprintf(`tr[data-job="%s"]`, jobIDs[1])))
	browse(t, ctx, "select the second row", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"),
		chromedp.WaitVisible(fmt.Sprintf(`tr.selected[data-job="%s"]`, first)))
	browse(t, ctx, "press K", chromedp.KeyEvent("K"))
	waitFor(t, 10*time.Second, "spool job list to put "+first+" first again", func() bool {
		var rows []struct{ ID string }
		json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "job", "list")), &rows)
		return len(rows) == 2 && rows[0].ID == first
	})

	// Every view renders; a screenshot of each.
	for _, view := range []string{"merge", "prd", "orchestrator", "activity", "analytics", "tasks/" + stuck} {
		browse(t, ctx, "open "+view, chromedp.Navigate(base+"/"+view), chromedp.WaitVisible(`#main`))
		body := pageRead(t, ctx, "read "+view, `#main`, "outerHTML")
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s shows markup from the log unescaped", view)
		}
		screenshot(t, ctx, strings.ReplaceAll(view, "/", "-"))
	}
	keyboard(t, ctx, base)
	tierChangeAsks(t, ctx, base, bin, dir, env)
	dragScrolls(t, ctx, base)
	bulkCancel(t, ctx, base, bin, dir, env)
	narrowAndDark(t, ctx, base, stuck)
}

// keyboard: / goes to the search box, j and k move through the cards,
// Enter opens the selected one.
func keyboard(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	browse(t, ctx, "open tasks", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(`#live.on`))
	browse(t, ctx, "press /", chromedp.KeyEvent("/"))
	if name := value(t, ctx, "read the focus", chromedp.Evaluate[string](`document.activeElement.name || ""`)); name != "q" {
		t.Errorf("/ focused %q, want the search box", name)
	}
	browse(t, ctx, "leave the box", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	browse(t, ctx, "press j j k j", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"), chromedp.KeyEvent("j"))
	cards := value(t, ctx, "read the selection", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#main article.card")].map(c => c.dataset.task + (c.classList.contains("selected") ? "*" : ""))`))
	if len(cards) < 2 || !strings.HasSuffix(cards[1], "*") || strings.Count(strings.Join(cards, " "), "*") != 1 {
		t.Fatalf("after j j k j the cards are %v, want the second selected", cards)
	}
	want := strings.TrimSuffix(cards[1], "*")
	browse(t, ctx, "press Enter", chromedp.KeyEvent("\r"), chromedp.WaitVisible(`#main[data-page="task"]`))
	if path := value(t, ctx, "read the URL", chromedp.Evaluate[string](`location.pathname`)); path != "/tasks/"+want {
		t.Errorf("Enter opened %s, want /tasks/%s", path, want)
	}
}

// narrowAndDark: at a phone's 400 px no view scrolls sideways and the
// Tasks view shows Blocked first; in dark mode the page is dark. A
// screenshot of every view in each.
func narrowAndDark(t *testing.T, ctx context.Context, base, task string) {
	t.Helper()
	views := []string{"tasks", "jobs", "merge", "prd", "orchestrator", "activity", "analytics", "tasks/" + task}
	browse(t, ctx, "a phone's width", chromedp.EmulateViewport(400, 850))
	for _, view := range views {
		browse(t, ctx, "open "+view+" at 400 px", chromedp.Navigate(base+"/"+view), chromedp.WaitVisible(`#main`))
		if w := value(t, ctx, "measure "+view, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 400 {
			t.Errorf("%s at 400 px is %d px wide: it scrolls sideways", view, w)
		}
		screenshot(t, ctx, strings.ReplaceAll(view, "/", "-")+"-400")
	}
	browse(t, ctx, "open tasks at 400 px", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(`#main`))
	if top := value(t, ctx, "find Blocked", chromedp.Evaluate[[]float64](
		`[...document.querySelectorAll("[data-col]")].map(c => c.getBoundingClientRect().top)`)); len(top) == 0 {
		t.Error("no columns on the Tasks view")
	} else if blocked := value(t, ctx, "find Blocked", chromedp.Evaluate[float64](`document.querySelector('[data-col="blocked"]').getBoundingClientRect().top`)); blocked > slices.Min(top) {
		t.Errorf("at 400 px Blocked is at %.0f px, below another column at %.0f", blocked, slices.Min(top))
	}
	browse(t, ctx, "a desktop's width", chromedp.EmulateViewport(1400, 1000))
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	for _, view := range views {
		browse(t, ctx, "open "+view+" dark", chromedp.Navigate(base+"/"+view), chromedp.WaitVisible(`#main`))
		screenshot(t, ctx, strings.ReplaceAll(view, "/", "-")+"-dark")
	}
	bg := value(t, ctx, "read the background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if bg != "rgb(20, 23, 28)" {
		t.Errorf("in dark mode the page's background is %s", bg)
	}
}

// leakedCookiesWriteNothing: browsers send a host's cookies to every port
// on it, so another web server on 127.0.0.1 that the browser visits after
// login gets the board's cookies. Nothing it gets lets it write: not as
// cookies, not as a token.
func leakedCookiesWriteNothing(t *testing.T, ctx context.Context, base, task string) {
	t.Helper()
	got := make(chan string, 10)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Cookie")
		fmt.Fprint(w, "<!doctype html><title>another local service</title><p>hello")
	}))
	defer other.Close()
	browse(t, ctx, "visit another local server", chromedp.Navigate(other.URL+"/"), chromedp.WaitVisible(`p`))
	cookies := <-got
	if !strings.Contains(cookies, "spool_read_") {
		t.Errorf("set-up: the other server got no board cookie (%q)", cookies)
	}
	for _, c := range strings.Split(cookies, "; ") {
		_, v, _ := strings.Cut(c, "=")
		for name, h := range map[string]http.Header{"cookie " + c: {"Cookie": {c}}, "bearer " + v: {"Authorization": {"Bearer " + v}}} {
			req, _ := http.NewRequest(http.MethodPost, base+"/api/tasks/"+task+"/unblock", nil)
			req.Header = h
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("a write with the leaked %s: status %d, want 401", name, res.StatusCode)
			}
		}
	}
	browse(t, ctx, "back to the board", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(`#live.on`))
}

// bulkCancel: tick every job, Cancel asks, then cancels each.
func bulkCancel(t *testing.T, ctx context.Context, base, bin, dir string, env []string) {
	t.Helper()
	before := len(jobEvents(t, bin, dir, env, "job.cancelled"))
	browse(t, ctx, "open jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(`#live.on`))
	n := value(t, ctx, "tick every job", chromedp.Evaluate[int](`(() => { const p = document.querySelectorAll("#jobq input.pick"); p.forEach(c => c.click()); return p.length })()`))
	if n < 2 {
		t.Fatalf("%d jobs to pick, want 2 or more", n)
	}
	click(t, ctx, "cancel selected", `.bulk button[data-bulk="cancel"]`)
	browse(t, ctx, "the bulk cancel asks", chromedp.WaitVisible(`.bulk button[data-bulk="cancel"].armed`))
	if got := len(jobEvents(t, bin, dir, env, "job.cancelled")); got != before {
		t.Fatalf("one click cancelled %d jobs", got-before)
	}
	// A live update meanwhile keeps the question asked (and the ticks).
	version := value(t, ctx, "read the page's version", chromedp.Evaluate[string](`document.body.dataset.version || "0"`))
	jobSpool(t, bin, dir, env, "task", "add", "a change while the user confirms")
	browse(t, ctx, "a live update", chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.body.dataset.version || "0") !== %q`, version)))
	click(t, ctx, "confirm", `.bulk button[data-bulk="cancel"].armed`)
	waitFor(t, 10*time.Second, "every ticked job cancelled", func() bool { return len(jobEvents(t, bin, dir, env, "job.cancelled")) == before+n })
}

// tierChangeAsks: a move that would change a job's tier (a background job
// put among normal ones) asks first, and happens when made again.
func tierChangeAsks(t *testing.T, ctx context.Context, base, bin, dir string, env []string) {
	t.Helper()
	bg := submitJob(t, bin, dir, env, "--name", "nightly", "--priority", "background", "--", "/bin/true")
	browse(t, ctx, "open jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(fmt.Sprintf(`tr[data-job="%s"]`, bg)))
	n := value(t, ctx, "count rows", chromedp.Evaluate[int](`document.querySelectorAll("#jobq tbody tr").length`))
	for range n {
		browse(t, ctx, "press j", chromedp.KeyEvent("j"))
	}
	browse(t, ctx, "select the background job", chromedp.WaitVisible(fmt.Sprintf(`tr.selected[data-job="%s"]`, bg)))
	browse(t, ctx, "press K", chromedp.KeyEvent("K"))
	browse(t, ctx, "the page asks", chromedp.WaitVisible(`#toast`))
	if msg := pageText(t, ctx, "read the question", "#toast"); !strings.Contains(msg, "would become normal") {
		t.Errorf("the page says %q, want it to ask before %s becomes normal", msg, bg)
	}
	if j := showJob(t, bin, dir, env, bg); j.Tier != jobs.Background {
		t.Fatalf("one K moved %s into %s", bg, j.Tier)
	}
	browse(t, ctx, "press K again", chromedp.KeyEvent("K"))
	waitFor(t, 10*time.Second, bg+" to become normal", func() bool { return showJob(t, bin, dir, env, bg).Tier == jobs.Normal })
}

// dragScrolls: a drag held near the window's bottom edge scrolls the page,
// so a row off screen can be reached.
func dragScrolls(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	browse(t, ctx, "a short window", chromedp.EmulateViewport(1400, 260))
	defer browse(t, ctx, "a desktop's window", chromedp.EmulateViewport(1400, 1000))
	browse(t, ctx, "open jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(`#live.on`))
	if h := value(t, ctx, "measure", chromedp.Evaluate[int](`document.documentElement.scrollHeight - window.innerHeight`)); h < 50 {
		t.Fatalf("set-up: the page scrolls only %d px", h)
	}
	from := value(t, ctx, "find a grip", chromedp.Evaluate[[]float64](
		`(r => [r.left + r.width/2, r.top + r.height/2])(document.querySelector('tr[data-movable] td.grip').getBoundingClientRect())`))
	left := func(p *input.DispatchMouseEventParams) { p.Button = input.MouseButtonLeft; p.Buttons = 1 }
	browse(t, ctx, "drag to the bottom edge",
		chromedp.MouseEvent(chromedp.MousePressed, from[0], from[1], left, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, from[0], 250, left),
		chromedp.Poll[chromedp.Void](`window.scrollY > 20`))
	browse(t, ctx, "let go outside any row", chromedp.MouseEvent(chromedp.MouseMoved, 5, 250, left),
		chromedp.MouseEvent(chromedp.MouseReleased, 5, 250, left, chromedp.ClickCount(1)))
}
