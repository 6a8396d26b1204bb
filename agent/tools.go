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

// Tool names.
const (
	ToolExecuteBash = "execute_bash"
	ToolReadFile    = "read_file"
	ToolWriteFile   = "write_file"
)

// ToolInfo is what the tool descriptions tell the model about the sandbox.
type ToolInfo struct {
	CallTimeout   time.Duration
	OutputCap     int // bytes of each result the model sees
	Network       sandbox.NetworkMode
	WorkspaceMode sandbox.WorkspaceMode
}

// toolSpec is one entry of the registry: how the model sees a tool, and how
// a call's arguments become an action.
type toolSpec struct {
	name     string
	describe func(ToolInfo) string
	schema   string
	parse    func(raw []byte) (*toolCall, error)
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
	text      string // for the model, before redaction and capping
	preview   string // for the terminal
	exitCode  *int
	timedOut  bool
	duration  time.Duration
	outBytes  int64
	outSHA    string
	auditPrev string
	truncated bool
	output    []byte // execute_bash: the output as the sandbox returned it
	oom       bool
	exec      *sandbox.ExecResult // execute_bash: what the executor saw
}

// registry lists the built-in tools, in the order the model sees them.
var registry = []toolSpec{
	{name: ToolExecuteBash, describe: describeBash, schema: bashSchema, parse: parseBash},
	{name: ToolReadFile, describe: describeRead, schema: readSchema, parse: parseRead},
	{name: ToolWriteFile, describe: describeWrite, schema: writeSchema, parse: parseWrite},
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
	if info.Network == sandbox.NetworkOpen {
		net = "The network is open."
	}
	ro := ""
	if info.WorkspaceMode == sandbox.WorkspaceRO {
		ro = " The workspace is mounted read-only."
	}
	return fmt.Sprintf("It runs inside a disposable Linux sandbox container; the project is at /workspace (the working directory).%s %s Every call is checked against a policy and recorded in an audit log; a denied call returns the reason instead of running.", ro, net)
}

func describeBash(info ToolInfo) string {
	return fmt.Sprintf("Run a bash script (bash -c) and return its exit code and combined stdout/stderr. %s Each call is a fresh shell (no state is kept between calls except files); it is killed with all its processes after %s, and processes left running are killed when it returns. Output beyond %d bytes is cut to its head and tail. Prefer read_file and write_file for files.",
		sandboxNote(info), info.CallTimeout, info.OutputCap)
}

func describeRead(info ToolInfo) string {
	return fmt.Sprintf("Read a text file. Paths are relative to /workspace. At most %d bytes are returned per call; use offset and limit to page through larger files. %s", info.OutputCap, sandboxNote(info))
}

func describeWrite(info ToolInfo) string {
	return fmt.Sprintf("Create or replace a whole file with the given content (written atomically; parent directories are created). Paths are relative to /workspace. %s", sandboxNote(info))
}

const bashSchema = `{"type":"object","properties":{"command":{"type":"string","description":"The bash script to run in /workspace, e.g. \"ls -la\" or \"python3 -m pytest -q\"."}},"required":["command"],"additionalProperties":false}`

const readSchema = `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to /workspace."},"offset":{"type":"integer","minimum":0,"description":"Byte offset to start reading at (default 0)."},"limit":{"type":"integer","minimum":1,"description":"Maximum number of bytes to return (default and maximum: the output cap)."}},"required":["path"],"additionalProperties":false}`

const writeSchema = `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to /workspace."},"content":{"type":"string","description":"The complete new content of the file."}},"required":["path","content"],"additionalProperties":false}`

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

func parseBash(raw []byte) (*toolCall, error) {
	var a struct {
		Command *string `json:"command"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.Command == nil {
		return nil, errors.New(`the "command" argument is missing`)
	}
	if strings.TrimSpace(*a.Command) == "" {
		return nil, errors.New(`the "command" argument is empty`)
	}
	cmd := *a.Command
	return &toolCall{
		action:  policy.Action{Kind: policy.Command, Command: cmd},
		args:    map[string]any{"command": cmd},
		summary: cmd,
		run: func(ctx context.Context, t *Tools) (runResult, error) {
			return runBash(ctx, t, cmd)
		},
	}, nil
}

func parseRead(raw []byte) (*toolCall, error) {
	var a struct {
		Path   *string `json:"path"`
		Offset *int64  `json:"offset"`
		Limit  *int64  `json:"limit"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil || *a.Path == "" {
		return nil, errors.New(`the "path" argument is missing or empty`)
	}
	var off, lim int64
	args := map[string]any{"path": *a.Path}
	if a.Offset != nil {
		if *a.Offset < 0 {
			return nil, errors.New(`"offset" must be 0 or more`)
		}
		off = *a.Offset
		args["offset"] = off
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return nil, errors.New(`"limit" must be 1 or more`)
		}
		lim = *a.Limit
		args["limit"] = lim
	}
	path := *a.Path
	return &toolCall{
		action:  policy.Action{Kind: policy.Read, Path: path},
		args:    args,
		summary: path,
		run: func(ctx context.Context, t *Tools) (runResult, error) {
			return runRead(ctx, t, path, off, lim)
		},
	}, nil
}

func parseWrite(raw []byte) (*toolCall, error) {
	var a struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil || *a.Path == "" {
		return nil, errors.New(`the "path" argument is missing or empty`)
	}
	if a.Content == nil {
		return nil, errors.New(`the "content" argument is missing (use "" for an empty file)`)
	}
	path, content := *a.Path, *a.Content
	return &toolCall{
		action:  policy.Action{Kind: policy.Write, Path: path},
		args:    map[string]any{"path": path, "content": content},
		summary: fmt.Sprintf("%s (%d bytes)", path, len(content)),
		run: func(ctx context.Context, t *Tools) (runResult, error) {
			return runWrite(ctx, t, path, content)
		},
	}, nil
}

func runBash(ctx context.Context, t *Tools, cmd string) (runResult, error) {
	res, err := t.Session.Exec(ctx, sandbox.ExecRequest{Command: cmd, Timeout: t.callTimeout()})
	if err != nil {
		return runResult{}, err
	}
	out := string(res.Output)
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "timed out after %s: the command and every process it started were killed (exit code %d). Partial output:\n", t.callTimeout(), res.ExitCode)
	case res.OOMKilled:
		fmt.Fprintf(&b, "killed: out of memory (exit code %d). Output:\n", res.ExitCode)
	default:
		fmt.Fprintf(&b, "exit code: %d\n", res.ExitCode)
	}
	if out == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteByte('\n')
		}
	}
	if res.Truncated {
		fmt.Fprintf(&b, "[output truncated by the sandbox: %d bytes in total; only the head and tail are shown. Filter it (grep, head, tail) or redirect it to a file and read parts of it.]\n", res.OutputBytes)
	}
	b.WriteString(execTimeText(&res))
	code := res.ExitCode
	return runResult{
		text: b.String(), preview: out, exitCode: &code, timedOut: res.TimedOut,
		duration: res.Duration, outBytes: res.OutputBytes, outSHA: res.OutputSHA,
		auditPrev: out, truncated: res.Truncated, output: res.Output, oom: res.OOMKilled,
		exec: &res,
	}, nil
}

func runRead(ctx context.Context, t *Tools, path string, off, lim int64) (runResult, error) {
	capN := int64(t.outputCap())
	if lim <= 0 || lim > capN {
		lim = capN
	}
	start := time.Now()
	res, err := t.Session.ReadFile(ctx, sandbox.ReadRequest{Path: path, Offset: off, Limit: lim, Rules: t.fileRules(false)})
	if err != nil {
		return runResult{}, err
	}
	d := time.Since(start)
	content := res.Content
	n := int64(len(content))
	name := res.Resolved
	if name == "" {
		name = path
	}
	var b strings.Builder
	if bytes.IndexByte(content, 0) >= 0 {
		fmt.Fprintf(&b, "%s is a binary file (%d bytes); its content is not shown. Inspect it with execute_bash (file, od -c, xxd | head).\n", name, res.Size)
		return runResult{text: b.String(), preview: fmt.Sprintf("binary, %d bytes", res.Size), duration: d, outBytes: n, outSHA: res.SHA256}, nil
	}
	text := strings.ToValidUTF8(string(content), "\uFFFD")
	if off == 0 && n >= res.Size {
		fmt.Fprintf(&b, "%s (%d bytes):\n", name, res.Size)
	} else {
		fmt.Fprintf(&b, "%s (bytes %d-%d of %d):\n", name, off, off+n, res.Size)
	}
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	if rest := res.Size - off - n; rest > 0 && n > 0 {
		fmt.Fprintf(&b, "[file continues: %d more bytes; call read_file with offset=%d to read on]\n", rest, off+n)
	}
	return runResult{
		text: b.String(), preview: text, duration: d, outBytes: n, outSHA: res.SHA256,
		auditPrev: text, truncated: off+n < res.Size,
	}, nil
}

func runWrite(ctx context.Context, t *Tools, path, content string) (runResult, error) {
	start := time.Now()
	res, err := t.Session.WriteFile(ctx, sandbox.WriteRequest{Path: path, Content: []byte(content), Rules: t.fileRules(true)})
	if err != nil {
		return runResult{}, err
	}
	name := res.Resolved
	if name == "" {
		name = path
	}
	text := fmt.Sprintf("wrote %d bytes to %s (sha256 %s)\n", res.Bytes, name, res.SHA256)
	return runResult{text: text, preview: strings.TrimSpace(text), duration: time.Since(start), outBytes: res.Bytes, outSHA: res.SHA256}, nil
}
