package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

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
	return fmt.Sprintf("Run a bash script (bash -c) and return its exit code and combined stdout/stderr. %s Each call is a fresh shell (no state is kept between calls except files); it is killed with all its processes after %s unless you pass \"timeout\" (seconds, at most %d) for a longer build or test run, and processes left running are killed when it returns. Output beyond %d bytes is cut to its head and tail. Prefer read_file and write_file for files.",
		sandboxNote(info), info.CallTimeout, int(info.maxTimeout().Seconds()), info.OutputCap)
}

const bashSchema = `{"type":"object","properties":{"command":{"type":"string","description":"The bash script to run in /workspace, e.g. \"ls -la\" or \"python3 -m pytest -q\"."},"timeout":{"type":"integer","minimum":1,"description":"Optional: seconds before the command is killed, for a long build or test run (default and maximum in the tool description)."}},"required":["command"],"additionalProperties":false}`

func parseBash(raw []byte) (*toolCall, error) {
	var a struct {
		Command *string  `json:"command"`
		Timeout *float64 `json:"timeout"`
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
	args := map[string]any{"command": cmd}
	var asked time.Duration
	if a.Timeout != nil {
		if *a.Timeout < 1 || *a.Timeout != math.Trunc(*a.Timeout) || *a.Timeout > 1e6 {
			return nil, errors.New(`the "timeout" argument must be a whole number of seconds, at least 1`)
		}
		asked = time.Duration(*a.Timeout) * time.Second
		args["timeout"] = int(*a.Timeout)
	}
	return &toolCall{
		action:  policy.Action{Kind: policy.Command, Command: cmd},
		args:    args,
		summary: cmd,
		run: func(ctx context.Context, t *Tools) (runResult, error) {
			return runBash(ctx, t, cmd, asked)
		},
	}, nil
}

// bashTimeout is a call's timeout: the one it asked for, capped at the
// bound (capped reports that), else the default.
func (t *Tools) bashTimeout(asked time.Duration) (d time.Duration, capped bool) {
	if asked <= 0 {
		return t.callTimeout(), false
	}
	if m := t.callTimeoutMax(); asked > m {
		return m, true
	}
	return asked, false
}

// timeoutHint says how to give a call more time.
func (t *Tools) timeoutHint(d time.Duration) string {
	if m := t.callTimeoutMax(); d < m {
		return fmt.Sprintf(`to allow longer, call again with "timeout": %d (seconds; at most %d, the policy's sandbox.timeouts.call_max)`, int(min(2*d, m).Seconds()), int(m.Seconds()))
	}
	return fmt.Sprintf("%s is the most the policy allows (sandbox.timeouts.call_max): run less at once (one test file, a narrower target), or the user raises sandbox.timeouts.call_max", d)
}

func runBash(ctx context.Context, t *Tools, cmd string, asked time.Duration) (runResult, error) {
	timeout, capped := t.bashTimeout(asked)
	req := sandbox.ExecRequest{Command: cmd, Timeout: timeout}
	if t.Policy != nil {
		// What the script should run: a program that runs and is not
		// among them is an unexpected_exec alarm (parsed vs executed);
		// with them, what the package scripts it runs name.
		d := t.Policy.Decide(policy.Action{Kind: policy.Command, Command: cmd})
		req.Expect = append(d.Programs(), t.scriptPrograms(ctx, d)...)
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
	if capped {
		fmt.Fprintf(&b, "[timeout capped at %s, the policy's sandbox.timeouts.call_max]\n", timeout)
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "timed out after %s: the command and every process it started were killed (exit code %d); %s. Partial output:\n", timeout, res.ExitCode, t.timeoutHint(timeout))
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
