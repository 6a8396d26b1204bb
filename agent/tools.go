package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	openai "github.com/sashabaranov/go-openai"
)

// ToolInfo is what the tool descriptions tell the model about the sandbox.
type ToolInfo struct {
	CallTimeout    time.Duration
	CallTimeoutMax time.Duration // the most a call may ask for (execute_bash's timeout argument)
	OutputCap      int           // bytes of each result the model sees
	Network        sandbox.NetworkMode
	WorkspaceMode  sandbox.WorkspaceMode
}

// maxTimeout is the most one execute_bash call may ask for (never below
// the default).
func (i ToolInfo) maxTimeout() time.Duration { return max(i.CallTimeoutMax, i.CallTimeout) }

// toolSpec is one entry of the registry: everything about one tool, in
// that tool's own file (tool_*.go). A new tool is one new file and one line
// in registry; TestRegistryRoundTrips checks that it is complete.
type toolSpec struct {
	name     string
	describe func(ToolInfo) string // for the model
	schema   string                // JSON schema of the arguments
	// parse turns the model's arguments into a call: the policy action,
	// the arguments as recorded, and how to run it.
	parse func(raw []byte) (*toolCall, error)
	// action is the policy action of recorded arguments (audit replay);
	// ok is false when they are missing.
	action func(args map[string]any) (a policy.Action, ok bool)
	// status is the printer's word on a call that ran ("exit 0", "12
	// bytes"; warn paints it); nil = none.
	status func(o Outcome) (text string, warn bool)
	// quiet hides the output preview of a call that was not denied.
	quiet bool
	// example is valid arguments (JSON), for the registry's own tests.
	example string
}

// toolCall is a parsed call, ready for the policy and the sandbox.
type toolCall struct {
	action  policy.Action
	args    map[string]any // as recorded in the audit log
	summary string         // command or path, for the terminal
	run     func(ctx context.Context, t *Tools) (runResult, error)
}

// runResult is what the sandbox did.
type runResult struct {
	text     string // for the model, before redaction and capping
	preview  string // for the terminal
	exitCode *int
	timedOut bool
	// interrupted: the call was cancelled; its processes were killed.
	interrupted bool
	duration    time.Duration
	outBytes    int64
	outSHA      string
	auditPrev   string
	truncated   bool
	output      []byte // execute_bash: the output as the sandbox returned it
	oom         bool
	exec        *sandbox.ExecResult // execute_bash: what the executor saw
}

// registry lists the built-in tools, in the order the model sees them.
var registry = []toolSpec{
	bashTool,
	readTool,
	writeTool,
}

func lookupTool(name string) (*toolSpec, bool) {
	for i := range registry {
		if registry[i].name == name {
			return &registry[i], true
		}
	}
	return nil, false
}

// ToolNames lists the tools the model may call.
func ToolNames() []string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.name
	}
	return names
}

// Definitions returns the tool definitions sent to the model.
func Definitions(info ToolInfo) []openai.Tool {
	tools := make([]openai.Tool, len(registry))
	for i, s := range registry {
		tools[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: s.name, Description: s.describe(info), Parameters: json.RawMessage(s.schema),
		}}
	}
	return tools
}

func sandboxNote(info ToolInfo) string {
	net := "There is no network access."
	switch info.Network {
	case sandbox.NetworkOpen:
		net = "The network is open."
	case sandbox.NetworkProxy:
		net = "Network access is only through the HTTP(S) proxy set in HTTP_PROXY/HTTPS_PROXY, to the hosts the policy allows; a refusal is HTTP 403 naming the rule."
	}
	ro := ""
	if info.WorkspaceMode == sandbox.WorkspaceRO {
		ro = " The workspace is mounted read-only."
	}
	return fmt.Sprintf("It runs inside a disposable Linux sandbox container; the project is at /workspace (the working directory).%s %s Every call is checked against a policy and recorded in an audit log; a denied call returns the reason instead of running.", ro, net)
}

// decodeArgs decodes a tool call's JSON arguments strictly into v: an
// object, no unknown fields, nothing after it.
func decodeArgs(raw []byte, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if !utf8.Valid(raw) {
		return errors.New("the arguments are not valid UTF-8")
	}
	if raw[0] != '{' {
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return fmt.Errorf("the arguments are not valid JSON (%v); send a JSON object", err)
		}
		return fmt.Errorf("the arguments must be a JSON object, not %s", jsonKind(x))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the arguments are not valid: %v", err)
	}
	if dec.More() {
		return errors.New("the arguments have extra data after the JSON object")
	}
	return nil
}

func jsonKind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "that"
}

// ActionFor is the policy action of a recorded tool call (its name and
// arguments as the audit log holds them); ok is false for an unknown tool
// or missing arguments.
func ActionFor(tool string, args map[string]any) (policy.Action, bool) {
	s, ok := lookupTool(tool)
	if !ok {
		return policy.Action{}, false
	}
	return s.action(args)
}

// stringArg is args[k] when it is a string.
func stringArg(args map[string]any, k string) (string, bool) {
	s, ok := args[k].(string)
	return s, ok
}

// toolList names the registered tools for a prompt: "a, b and c".
func toolList() string {
	names := ToolNames()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// countWord spells small counts for a prompt.
func countWord(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}
