package wire

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Exec runs one command in the sandbox.
func (c *Client) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = max(timeout, time.Millisecond) // the executor counts whole milliseconds
	wreq := &Request{Op: OpExec, Command: req.Command, TimeoutMS: timeout.Milliseconds(), Expect: req.Expect}
	var out func(*OutChunk)
	if req.Stdout != nil || req.Stderr != nil {
		wreq.StreamOutput = true
		out = newOutWriters(req.Stdout, req.Stderr).write
	}
	resp, err := c.exchange(ctx, wreq, timeout+Grace, out)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if resp.Error != "" {
		return sandbox.ExecResult{}, fmt.Errorf("%w: %s", sandbox.ErrExecutor, resp.Error)
	}
	d := time.Duration(resp.DurationNS)
	res := sandbox.ExecResult{
		ExitCode: resp.ExitCode, TimedOut: resp.TimedOut, Interrupted: resp.Interrupted, OOMKilled: resp.OOMKilled,
		Duration: d, DurationMS: d.Milliseconds(),
		Output: resp.Output, OutputBytes: resp.OutputBytes, OutputSHA: resp.OutputSHA, Truncated: resp.Truncated,
		ProgramsDropped: resp.Dropped,
	}
	for _, p := range resp.Programs {
		res.Programs = append(res.Programs, sandbox.ProgramCount{Name: p.Name, Program: p.Program, Toolchain: p.Toolchain, Unknown: p.Unknown, Count: p.Count})
	}
	for _, e := range resp.Execs {
		res.DeniedExecs = append(res.DeniedExecs, sandbox.DeniedExec{Argv: e.Argv, Exe: e.Exe, PID: e.PID, Decision: e.Verdict, Rule: e.Rule, Reason: e.Reason})
	}
	for _, a := range resp.Alarms {
		res.Alarms = append(res.Alarms, sandbox.Alarm{Path: string(a.Path), What: a.What, Action: a.Action, Rule: a.Rule, Argv: a.Argv, Parents: a.Parents})
	}
	return res, nil
}

func wireRules(r *sandbox.FileRules) *Rules {
	if r == nil {
		return nil
	}
	return &Rules{Allow: r.Allow, Deny: r.Deny}
}

func fileErr(resp *Response) error {
	if resp.Error == "" {
		return nil
	}
	return &sandbox.FileError{Msg: resp.Error, Resolved: string(resp.Resolved), Rule: resp.Rule, Denied: resp.Denied}
}

// ReadFile reads a file below the workspace.
func (c *Client) ReadFile(ctx context.Context, req sandbox.ReadRequest) (sandbox.ReadResult, error) {
	resp, err := c.roundTrip(ctx, &Request{Op: OpRead, Path: []byte(req.Path), Offset: req.Offset, Limit: req.Limit, Rules: wireRules(req.Rules)}, fileWait)
	if err != nil {
		return sandbox.ReadResult{}, err
	}
	if err := fileErr(resp); err != nil {
		return sandbox.ReadResult{}, err
	}
	return sandbox.ReadResult{Content: resp.Content, Size: resp.Size, Resolved: string(resp.Resolved), SHA256: resp.SHA256}, nil
}

// WriteFile writes a file below the workspace atomically.
func (c *Client) WriteFile(ctx context.Context, req sandbox.WriteRequest) (sandbox.WriteResult, error) {
	if len(req.Content) > MaxFileBytes {
		return sandbox.WriteResult{}, &sandbox.FileError{Msg: fmt.Sprintf("write_file: content is %d bytes, over the %d-byte cap", len(req.Content), MaxFileBytes)}
	}
	resp, err := c.roundTrip(ctx, &Request{Op: OpWrite, Path: []byte(req.Path), Content: req.Content, Rules: wireRules(req.Rules), Write: true}, fileWait)
	if err != nil {
		return sandbox.WriteResult{}, err
	}
	if err := fileErr(resp); err != nil {
		return sandbox.WriteResult{}, err
	}
	return sandbox.WriteResult{Resolved: string(resp.Resolved), Bytes: resp.Size, SHA256: resp.SHA256}, nil
}
