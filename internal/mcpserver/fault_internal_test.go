package mcpserver

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/table/tabletest"
)

// A call that reads a mapped snapshot something cut short in place is the
// call's corrupt_snapshot; the server goes on (it died by SIGBUS).
func TestAMappedFileCutShortIsTheCallsError(t *testing.T) {
	data := tabletest.CutShort(t)
	cut := &tool{name: "cut", in: reflect.TypeOf(struct{}{}), call: func(context.Context, store.Env, []byte) (any, string, error) {
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
