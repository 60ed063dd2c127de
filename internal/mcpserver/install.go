package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
)

// CodeInvalidClientConfig is a client's configuration file spool cannot
// edit without losing what is in it.
var CodeInvalidClientConfig = fault.Register(fault.Environment, "invalid_client_config")

// Clients are the MCP clients spool mcp install knows, and where each
// keeps its servers: a project's file for claude (Claude Code) and cursor,
// the user's for codex (Codex CLI), whose configuration has no project
// level.
var Clients = []string{"claude", "codex", "cursor"}

// Entry is one server entry: how a client starts spool mcp.
type Entry struct {
	Name    string   `json:"-"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// ValidName is a name every client's file takes as a bare key.
func ValidName(name string) bool {
	if len(name) < 1 || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ConfigPath is where client keeps its MCP servers: in root (the
// repository's work tree) for claude and cursor, in codexHome (or
// ~/.codex) for codex.
func ConfigPath(client, root, codexHome, home string) string {
	switch client {
	case "claude":
		return filepath.Join(root, ".mcp.json")
	case "cursor":
		return filepath.Join(root, ".cursor", "mcp.json")
	}
	if codexHome == "" {
		codexHome = filepath.Join(home, ".codex")
	}
	return filepath.Join(codexHome, "config.toml")
}

// Snippet is the entry as client's file has it.
func Snippet(client string, e Entry) []byte {
	if client == "codex" {
		return codexTable(e)
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{e.Name: e}}, "", "  ")
	return append(b, '\n')
}

// Install writes e into client's file at path, keeping every other entry
// and setting: it says whether the file changed (the same entry again
// changes nothing).
func Install(client, path string, e Entry) (changed bool, err error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var out []byte
	if client == "codex" {
		out = setCodexTable(old, e)
	} else if out, err = setJSONEntry(old, e); err != nil {
		return false, fault.New(CodeInvalidClientConfig, err, fmt.Sprintf("%s: %v; fix or move it, or add the entry by hand (spool mcp install %s --print)", path, err, client), "path", path)
	}
	if bytes.Equal(out, old) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm() // the user's own file: its mode stays
	}
	return true, durable.WriteFile(path, out, perm)
}

// setJSONEntry sets mcpServers.<name> in a client's JSON file (claude's
// .mcp.json, cursor's mcp.json); the other keys are kept as they are.
func setJSONEntry(old []byte, e Entry) ([]byte, error) {
	top := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &top); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := top["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return nil, fmt.Errorf("mcpServers is not an object: %v", err)
		}
	}
	entry, _ := json.Marshal(e)
	if prev, ok := servers[e.Name]; ok && jsonEqual(prev, entry) {
		return old, nil
	}
	servers[e.Name] = entry
	top["mcpServers"], _ = json.Marshal(servers)
	b, err := json.MarshalIndent(top, "", "  ")
	return append(b, '\n'), err
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// codexTable is e as Codex's config.toml table [mcp_servers.<name>].
func codexTable(e Entry) []byte {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = strconv.Quote(a) // a TOML basic string for what spool writes (ASCII flags and names)
	}
	return fmt.Appendf(nil, "[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n", e.Name, strconv.Quote(e.Command), strings.Join(args, ", "))
}

// setCodexTable replaces the table [mcp_servers.<name>] (and its
// subtables) in Codex's config.toml, or adds it at the end: the rest of
// the file is kept line for line.
func setCodexTable(old []byte, e Entry) []byte {
	header := "[mcp_servers." + e.Name + "]"
	sub := "[mcp_servers." + e.Name + "."
	lines := strings.SplitAfter(string(old), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case start < 0 && t == header:
			start = i
		case start >= 0 && strings.HasPrefix(t, "[") && !strings.HasPrefix(t, sub):
			end = i
		}
		if start >= 0 && end < len(lines) {
			break
		}
	}
	table := string(codexTable(e))
	if start < 0 {
		s := string(old)
		switch {
		case s == "":
		case strings.HasSuffix(s, "\n\n"):
		case strings.HasSuffix(s, "\n"):
			s += "\n"
		default:
			s += "\n\n"
		}
		return []byte(s + table)
	}
	block := strings.Join(lines[start:end], "")
	if strings.TrimSpace(block) == strings.TrimSpace(table) {
		return old
	}
	if end < len(lines) {
		table += "\n" // keep a blank line before the next table
	}
	return []byte(strings.Join(lines[:start], "") + table + strings.Join(lines[end:], ""))
}
