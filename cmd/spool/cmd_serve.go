package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/watch"
)

// Error codes of spool serve.
var (
	CodeTokenFileRequired = fault.Register(fault.Usage, "token_file_required")
	CodeInvalidTokenFile  = fault.Register(fault.Usage, "invalid_token_file")
	CodeListenFailed      = fault.Register(fault.Environment, "listen_failed")
)

// ServeCmd is the board (internal/board).
type ServeCmd struct {
	Addr        string `default:"127.0.0.1:7070" help:"Where to listen. An address other than loopback needs --token-file."`
	ReadOnly    bool   `help:"Serve no writes."`
	Open        bool   `help:"Open the board in the browser (xdg-open)."`
	TokenFile   string `placeholder:"FILE" help:"Read the write token from FILE instead of making one (at least 16 characters)."`
	OfflineFlag        // the merge queue's reads recover entries whose runner died: a claim
}

func (c *ServeCmd) Run(e *env) error {
	longRunning()
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fault.Usagef(CodeInvalidFlag, "--addr %s: want HOST:PORT such as 127.0.0.1:7070 (%v)", c.Addr, err)
	}
	private := !board.Loopback(host)
	if private && c.TokenFile == "" {
		return fault.Usagef(CodeTokenFileRequired, "--addr %s is not a loopback address: give --token-file, whose token every request then needs", c.Addr)
	}
	token := board.NewToken()
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return fault.New(CodeInvalidTokenFile, err, fmt.Sprintf("--token-file: %v", err), "path", c.TokenFile)
		}
		if token = strings.TrimSpace(string(b)); len(token) < 16 || strings.ContainsAny(token, " \t\r\n") {
			return fault.New(CodeInvalidTokenFile, nil, "--token-file: the token must be one word of at least 16 characters", "path", c.TokenFile)
		}
		if fi, err := os.Stat(c.TokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			e.warn(fmt.Sprintf("--token-file %s can be read by other users (mode %#o): chmod 600 %s", c.TokenFile, fi.Mode().Perm(), c.TokenFile))
		}
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	actors, err := board.ParseTokens(board.SettingsFrom(st.Config).Tokens)
	if err != nil {
		return err // config.Load checked it; kept for a file edited since
	}
	login := board.NewToken()[:24]
	srv := board.New(board.Options{Env: reloading(e, st, e.envs(st)), ReadOnly: c.ReadOnly, Private: private,
		Token: token, Login: login, Actors: actors, Warn: e.warn})
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fault.New(CodeListenFailed, err, fmt.Sprintf("cannot listen on %s: %v", c.Addr, err), "addr", c.Addr)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	follow := make(chan error, 1)
	wakes := watch.Wakes(ctx, st.Repo, watch.SettingsFrom(st.Config).Poll, e.warn)
	fault.Go(func() { follow <- srv.Follow(ctx, wakes) })

	base := baseURL(ln.Addr())
	url := base + "/login?code=" + login
	if c.ReadOnly {
		url = base + "/"
	}
	fmt.Fprintf(e.stdout, "spool serve: %s/\n", base)
	if !c.ReadOnly {
		fmt.Fprintf(e.stdout, "open this once to act from the browser: %s\n", url)
	}
	if c.Open {
		openBrowser(ctx, e, url)
	}
	hs := srv.HTTPServer() // its Shutdown ends the event streams; other requests finish
	served := make(chan error, 1)
	fault.Go(func() { served <- hs.Serve(ln) })
	select {
	case <-e.ctx.Done(): // first: a signal also ends the follower, with no error
		err = nil
	case err = <-served:
	case err = <-follow:
		if err == nil && e.ctx.Err() == nil {
			err = errors.New("stopped following the log")
		}
	}
	cancel()
	return shutdown(hs, err)
}

// baseURL is the board's URL for a listener: on every address (0.0.0.0,
// ::), the machine's name rather than an address nobody can open.
func baseURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return "http://" + a.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// openBrowser starts xdg-open on url; without one it says so.
func openBrowser(ctx context.Context, e *env, url string) {
	p, err := proc.Start(ctx, proc.Cmd{Argv: []string{"xdg-open", url}})
	if err != nil {
		e.warn(fmt.Sprintf("--open: cannot start xdg-open (%v); open %s yourself", err, url))
		return
	}
	fault.Go(func() { p.Wait() })
}
