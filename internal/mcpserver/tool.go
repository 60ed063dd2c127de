package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/table"
)

// Error codes of spool mcp.
var (
	CodeInvalidArguments = fault.Register(fault.Usage, "invalid_arguments")
	CodeUnknownTool      = fault.Register(fault.Usage, "unknown_tool")
	CodeToolNotAllowed   = fault.Register(fault.Usage, "tool_not_allowed")
)

// tool is one of spool's tools: a name, what it does, whether it appends,
// its input type's schema, and the call into the service.
type tool struct {
	name, desc string
	write      bool
	in         reflect.Type
	// call decodes args (valid for the schema) and calls the service: the
	// answer (the CLI's --json value, rawJSON when it is encoded already)
	// and a short text saying what it is.
	call func(ctx context.Context, env store.Env, args []byte) (any, string, error)

	once     sync.Once
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	err      error
}

// rawJSON is an answer that is JSON already.
type rawJSON []byte

// def makes a tool whose input is In, decoded from the call's arguments.
func def[In any](name, desc string, write bool, fn func(ctx context.Context, env store.Env, in In) (any, string, error)) *tool {
	return &tool{name: name, desc: desc, write: write, in: reflect.TypeFor[In](),
		call: func(ctx context.Context, env store.Env, args []byte) (any, string, error) {
			var in In
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return nil, "", fault.New(CodeInvalidArguments, err, fmt.Sprintf("%s: %v", name, err), "tool", name)
			}
			return fn(ctx, env, in)
		}}
}

// schemas infers the input schema from the Go type, once: a server's
// sessions and identities share it.
func (t *tool) schemas() (*jsonschema.Schema, *jsonschema.Resolved, error) {
	t.once.Do(func() {
		t.schema, t.err = jsonschema.ForType(t.in, nil)
		if t.err == nil {
			t.resolved, t.err = t.schema.Resolve(nil)
		}
	})
	return t.schema, t.resolved, t.err
}

// describe is the tool as tools/list shows it.
func (t *tool) describe() *mcp.Tool {
	schema, _, err := t.schemas()
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.name, err)) // a bug in the input type, caught by every test
	}
	ro, destructive := !t.write, false
	return &mcp.Tool{Name: t.name, Description: t.desc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &destructive, OpenWorldHint: &destructive}}
}

// handler runs a call of t as actor: the arguments checked against the
// schema, the store to itself, the answer encoded before the store is let
// go. A panic is the call's error (unexpected, with the stack), not the
// end of the server: the agent's session goes on.
func (s *Server) handler(t *tool, actor string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				perr, ok := p.(*fault.Error) // a typed error from where none can be returned (corrupt_snapshot)
				if mf, mapped := table.MappedFault(p); mapped {
					perr, ok = mf, true
				}
				if !ok {
					perr = fault.New(fault.CodeUnexpected, nil, fmt.Sprint("panic: ", p), "stack", string(debug.Stack()))
				}
				res, err = errorResult(perr), nil
			}
		}()
		// A mapped snapshot cut short in place faults where it is read:
		// the call's corrupt_snapshot, not the server's end by SIGBUS.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		body, text, cerr := s.call(ctx, t, actor, req.Params.Arguments)
		if cerr != nil {
			return errorResult(cerr), nil
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(body),
			Content: []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: string(body)}}}, nil
	}
}

// call checks args and runs t with the store to itself; it returns the
// answer as structured content (an object: the CLI's JSON, or
// {"result": …} around one that is not an object) and its text.
func (s *Server) call(ctx context.Context, t *tool, actor string, args json.RawMessage) ([]byte, string, error) {
	args, err := checkArgs(t, args)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.env(actor)
	if err != nil {
		return nil, "", err
	}
	v, text, err := t.call(ctx, env, args)
	if err != nil {
		return nil, "", err
	}
	body, err := encode(v)
	return body, text, err
}

// checkArgs validates a call's arguments against t's schema: what does not
// fit is invalid_arguments, with the tool's name, before anything is read.
func checkArgs(t *tool, args json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	_, resolved, err := t.schemas()
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fault.New(CodeInvalidArguments, err, fmt.Sprintf("%s: the arguments are not JSON: %v", t.name, err), "tool", t.name)
	}
	if err := resolved.Validate(v); err != nil {
		return nil, fault.New(CodeInvalidArguments, err, fmt.Sprintf("%s: %v", t.name, err), "tool", t.name)
	}
	return args, nil
}

// encode is an answer as structured content: compact JSON, strings as
// written (no HTML escapes), an object as it is and anything else (a list,
// null) as {"result": …}: clients take only an object there.
func encode(v any) ([]byte, error) {
	b, err := compact(v)
	if err != nil || len(b) > 0 && b[0] == '{' {
		return b, err
	}
	return slices.Concat([]byte(`{"result":`), b, []byte("}")), nil
}

// newEncoder writes JSON as the CLI's --json does: strings as written.
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// errorResult is a tool error: spool's --json error object as structured
// content, {"error": {"code", "message", …fields}}, and the message with
// its code as text.
func errorResult(err error) *mcp.CallToolResult {
	f := fault.Classify(err)
	body, merr := json.Marshal(map[string]any{"error": f.Object()})
	if merr != nil { // a field that does not encode: the code and message still do
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": f.Code, "message": f.Message}})
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(body),
		Content: []mcp.Content{&mcp.TextContent{Text: f.Code + ": " + f.Message}}}
}

// Resolve expands an allow-list (--tools): tool names and the sets read,
// agent and all. An empty list is every tool.
func Resolve(list []string) ([]string, error) {
	if len(list) == 0 {
		return ToolNames(), nil
	}
	var out []string
	for _, item := range list {
		item = strings.TrimSpace(item)
		names, ok := Sets[item]
		if item == "all" {
			names = ToolNames()
		}
		if !ok {
			if !slices.Contains(ToolNames(), item) {
				return nil, fault.New(CodeUnknownTool, nil, fmt.Sprintf("--tools: %q is neither a tool nor a set (%s; tools: %s)", item,
					strings.Join(setNames(), ", "), strings.Join(ToolNames(), ", ")), "tool", item)
			}
			names = []string{item}
		}
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	// In the table's order, whatever the list's.
	return slices.DeleteFunc(ToolNames(), func(n string) bool { return !slices.Contains(out, n) }), nil
}

// ResolveAgent is Resolve for the agent the orchestrator started for task:
// the trust boundary's set (the read tools: the guard refuses its writes), or the
// part of list inside it. A tool outside it is refused, not dropped: the
// one who asked for it learns why.
func ResolveAgent(list []string, task string) ([]string, error) {
	if len(list) == 0 {
		list = []string{"agent"}
	}
	tools, err := Resolve(list)
	if err != nil {
		return nil, err
	}
	for _, n := range tools {
		if !slices.Contains(Sets["agent"], n) {
			return nil, fault.New(CodeToolNotAllowed, nil, fmt.Sprintf("--tools: %s is not for the agent the orchestrator started for %s, "+
				"which has the agent tools alone (%s): spool closes its task by the agent's exit status", n, task,
				strings.Join(Sets["agent"], ", ")), "tool", n, "task", task)
		}
	}
	return tools, nil
}

func setNames() []string {
	out := make([]string, 0, len(Sets))
	for n := range Sets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
