package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// ToolWriteFile writes a whole file below the workspace.
const ToolWriteFile = "write_file"

var writeTool = toolSpec{
	name: ToolWriteFile, describe: describeWrite, schema: writeSchema, parse: parseWrite,
	action: func(args map[string]any) (policy.Action, bool) {
		p, ok := stringArg(args, "path")
		return policy.Action{Kind: policy.Write, Path: p}, ok
	},
	quiet:   true,
	example: `{"path":"out.txt","content":"hello\n"}`,
}

func describeWrite(info ToolInfo) string {
	return fmt.Sprintf("Create or replace a whole file with the given content (written atomically; parent directories are created). Paths are relative to /workspace. %s", sandboxNote(info))
}

const writeSchema = `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to /workspace."},"content":{"type":"string","description":"The complete new content of the file."}},"required":["path","content"],"additionalProperties":false}`

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
