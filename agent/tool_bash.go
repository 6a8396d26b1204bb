package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// ToolExecuteBash runs a bash script in the sandbox.
const ToolExecuteBash = "execute_bash"

// interruptedNote says how a cancelled call ended (tool result and audit).
const interruptedNote = "interrupted: the call was cancelled; the command and every process it started were killed"

var bashTool = toolSpec{
	name: ToolExecuteBash, describe: describeBash, schema: bashSchema, parse: parseBash,
	action: func(args map[string]any) (policy.Action, bool) {
		c, ok := stringArg(args, "command")
		return policy.Action{Kind: policy.Command, Command: c}, ok
	},
	status: func(o Outcome) (string, bool) {
		if o.TimedOut {
			return "timed out", true
		}
		if o.Interrupted {
			return "interrupted", true
		}
		return fmt.Sprintf("exit %d", o.ExitCode), o.ExitCode != 0
	},
	example: `{"command":"ls -la"}`,
}

func describeBash(info ToolInfo) string {
	return fmt.Sprintf("Run a bash script (bash -c) and return its exit code and combined stdout/stderr. %s Each call is a fresh shell (no state is kept between calls except files); it is killed with all its processes after %s, and processes left running are killed when it returns. Output beyond %d bytes is cut to its head and tail. Prefer read_file and write_file for files.",
		sandboxNote(info), info.CallTimeout, info.OutputCap)
}

const bashSchema = `{"type":"object","properties":{"command":{"type":"string","description":"The bash script to run in /workspace, e.g. \"ls -la\" or \"python3 -m pytest -q\"."}},"required":["command"],"additionalProperties":false}`

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

func runBash(ctx context.Context, t *Tools, cmd string) (runResult, error) {
	req := sandbox.ExecRequest{Command: cmd, Timeout: t.callTimeout()}
	if t.Policy != nil {
		// What the script should run: a program that runs and is not
		// among them is an unexpected_exec alarm (parsed vs executed).
		req.Expect = t.Policy.Decide(policy.Action{Kind: policy.Command, Command: cmd}).Programs()
	}
	var streams []*redactStream
	for _, p := range []struct {
		w   io.Writer
		dst *io.Writer
	}{{t.Stdout, &req.Stdout}, {t.Stderr, &req.Stderr}} {
		if p.w != nil {
			rs := newRedactStream(p.w, t.redact)
			streams = append(streams, rs)
			*p.dst = rs
		}
	}
	res, err := t.Session.Exec(ctx, req)
	for _, rs := range streams {
		_ = rs.Close() // the rest of a last line without a newline
	}
	if err != nil {
		return runResult{}, err
	}
	out := string(res.Output)
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "timed out after %s: the command and every process it started were killed (exit code %d). Partial output:\n", t.callTimeout(), res.ExitCode)
	case res.Interrupted:
		fmt.Fprintf(&b, "%s (exit code %d). Partial output:\n", interruptedNote, res.ExitCode)
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
		text: b.String(), preview: out, exitCode: &code, timedOut: res.TimedOut, interrupted: res.Interrupted,
		duration: res.Duration, outBytes: res.OutputBytes, outSHA: res.OutputSHA,
		auditPrev: out, truncated: res.Truncated, output: res.Output, oom: res.OOMKilled,
		exec: &res,
	}, nil
}
