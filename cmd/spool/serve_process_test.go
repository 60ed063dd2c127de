package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// spool serve stops on SIGTERM with exit 0, an event stream open: the
// streams end (they never finish by themselves), other requests finish.
func TestServeStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	srv := startSpool(t, bin, dir, env, "serve", "serve", "--addr", "127.0.0.1:0")
	base, _ := serveURL(t, srv)
	res, err := http.Get(base + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	first, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || !strings.Contains(first, `"build.status"`) {
		t.Fatalf("the stream's first line %q: %v", first, err)
	}
	if err := srv.stop(t); err != nil { // stop fails the test after 20 s
		t.Fatalf("spool serve after SIGTERM: %v\n%s", err, srv.output())
	}
}
