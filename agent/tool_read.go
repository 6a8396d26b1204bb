package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// ToolReadFile reads a file below the workspace.
const ToolReadFile = "read_file"

var readTool = toolSpec{
	name: ToolReadFile, describe: describeRead, schema: readSchema, parse: parseRead,
	action: func(args map[string]any) (policy.Action, bool) {
		p, ok := stringArg(args, "path")
		return policy.Action{Kind: policy.Read, Path: p}, ok
	},
	status:  func(o Outcome) (string, bool) { return fmt.Sprintf("%d bytes", o.OutBytes), false },
	example: `{"path":"README.md"}`,
}

func describeRead(info ToolInfo) string {
	return fmt.Sprintf("Read a text file. Paths are relative to /workspace. At most %d bytes are returned per call; use offset and limit to page through larger files. %s", info.OutputCap, sandboxNote(info))
}

const readSchema = `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to /workspace."},"offset":{"type":"integer","minimum":0,"description":"Byte offset to start reading at (default 0)."},"limit":{"type":"integer","minimum":1,"description":"Maximum number of bytes to return (default and maximum: the output cap)."}},"required":["path"],"additionalProperties":false}`

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
