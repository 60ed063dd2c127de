package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/sign"
	"golang.org/x/crypto/ssh"
)

// genMain makes a git repository whose spool log holds synthetic events,
// for the whole-process timings (spool init it before use):
//
//	spoolbench gen -dir /tmp/big -events 1000000 -writers 2 [-sign KEY]
func genMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench gen", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to create the repository in (must not exist)")
	events := fs.Int("events", 100_000, "number of events in all")
	writers := fs.Int("writers", 2, "number of writer files")
	keyFile := fs.String("sign", "", "sign every event (actor bench@example.com) with this SSH private key")
	fs.Parse(args)
	if *dir == "" || *writers < 1 {
		return fmt.Errorf("%w: -dir is required and -writers must be at least 1", errUsage)
	}
	if _, err := os.Stat(*dir); err == nil {
		return fmt.Errorf("%s exists", *dir)
	}
	if out, err := exec.Command("git", "init", "-q", *dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	var signer ssh.Signer
	if *keyFile != "" {
		var err error
		if signer, err = sign.LoadKey(*keyFile, "."); err != nil {
			return err
		}
	}
	eventsDir := filepath.Join(*dir, ".git", "spool", "events")
	for w := range *writers {
		n := *events / *writers
		if w < *events%*writers {
			n++
		}
		if err := generate(eventsDir, fmt.Sprintf("bench%02d", w), n, w+1, *writers, signer); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d events in %d writer files\n", *dir, *events, *writers)
	return nil
}

// generate writes n synthetic events for writer into dir, signed when
// signer is not nil. Writer k of m gets lc k, k+m, k+2m, ... so that
// several generated writers interleave in replay order.
func generate(dir, writer string, n, k, m int, signer ssh.Signer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, writer+eventlog.Ext), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	types := []string{"bench.created", "bench.updated", "bench.closed"}
	prev := ""
	for i := range n {
		e := &eventlog.Event{V: eventlog.Version, Writer: writer, Seq: uint64(i + 1), Prev: prev, LC: uint64(k + i*m),
			At: start.Add(time.Duration(i) * time.Millisecond), Actor: "bench@example.com",
			Type: types[i%len(types)], Subject: fmt.Sprintf("b-%d", i%10_000),
			Data: []byte(fmt.Sprintf(`{"title":"synthetic event %d","priority":%d,"labels":["bench","load"]}`, i, i%5))}
		hash, err := e.ContentHash()
		if err != nil {
			return err
		}
		e.ID = hex.EncodeToString(hash[:12])
		prev = e.ID
		if signer != nil {
			blob, err := sign.Sign(signer, sign.NamespaceEvents, sign.EventMessage(hash))
			if err != nil {
				return err
			}
			e.Sig = base64.StdEncoding.EncodeToString(blob)
		}
		line, err := e.Encode()
		if err != nil {
			return err
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
