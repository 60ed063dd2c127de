package mcpserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/table"
)

// A call that reads a mapped snapshot something cut short in place is the
// call's corrupt_snapshot; the server goes on (it died by SIGBUS).
func TestAMappedFileCutShortIsTheCallsError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.snap")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 3<<12), 0o644); err != nil {
		t.Fatal(err)
	}
	cut := &tool{name: "cut", in: reflect.TypeOf(struct{}{}), call: func(context.Context, store.Env, []byte) (any, string, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		data, unmap := table.MapFile(f, 0, 3<<12)
		if data == nil {
			t.Skip("no mappings on this system")
		}
		defer unmap()
		if err := os.Truncate(path, 0); err != nil {
			return nil, "", err
		}
		return int(data[2<<12]), "read past the file's new end", nil
	}}
	s := New(Options{Env: func() (store.Env, error) { return store.Env{}, nil }})
	res, err := s.handler(cut, "ada")(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "cut"}})
	if err != nil || res == nil || !res.IsError {
		t.Fatalf("result %+v, %v; want the call's error", res, err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "corrupt_snapshot") && !strings.Contains(text, "cut short") {
		t.Fatalf("the error says %q", text)
	}
}
