package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// exitSIGPIPE is what a shell reports for a command killed by SIGPIPE.
const exitSIGPIPE = 128 + int(syscall.SIGPIPE)

// errStdoutClosed ends an exec whose stdout reader went away.
var errStdoutClosed = errors.New("stdout was closed")

// execOut is where `agentbox exec` puts the command's output: streamed to
// stdout and stderr as it is written (the default), or as "output" events
// (--json-events). --json does not stream: its "output" keeps stdout and
// stderr interleaved exactly as written, as the model sees them, which two
// streams read apart cannot give.
type execOut struct {
	events *agent.JSONEvents
	stop   func()
	cancel context.CancelCauseFunc
}

// execOutput sets tools.Stdout and tools.Stderr for the chosen output and
// prints the start header (stderr) or event. The returned context ends
// the exec when stdout's reader goes away.
func execOutput(c *cli.Context, tools *agent.Tools, start agent.SessionStart) (context.Context, *execOut) {
	ctx, cancel := context.WithCancelCause(c.Context)
	o := &execOut{cancel: cancel, stop: func() { cancel(nil) }}
	switch {
	case c.Bool("json-events"):
		o.events = &agent.JSONEvents{W: c.App.Writer, Redact: tools.Redact}
		o.events.Start(start)
		tools.Stdout, tools.Stderr = o.events.Output("stdout"), o.events.Output("stderr")
	case c.Bool("json"):
	default:
		if !c.Bool("quiet") {
			header{session: start.Session, workspace: start.Workspace, policySource: start.Policy,
				network: sandbox.NetworkMode(start.Network), mode: sandbox.WorkspaceMode(start.WorkspaceMode), audit: start.Audit, broker: start.Broker, learn: c.Bool("learn"), git: start.GitIdentity}.print(c.App.ErrWriter)
		}
		// A closed stdout is an error to write to, not a signal that kills
		// agentbox with its sandbox still running.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		o.stop = func() { signal.Stop(pipe); cancel(nil) }
		tools.Stdout, tools.Stderr = &pipeWatch{w: c.App.Writer, cancel: cancel}, c.App.ErrWriter
	}
	return ctx, o
}

// stdoutClosed reports whether the exec ended because stdout went away.
func (o *execOut) stdoutClosed(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStdoutClosed)
}

// pipeWatch writes to w; when w's reader is gone (EPIPE) it ends the exec,
// as SIGPIPE would end a local command.
type pipeWatch struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

func (p *pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.cancel(errStdoutClosed)
	}
	return n, err
}

// printExecJSON prints exec's one JSON object: the capped output the model
// sees, its size and sha256. When the output is not valid UTF-8 it is
// base64 (output_encoding), so the bytes given are exactly the bytes the
// command wrote.
func printExecJSON(c *cli.Context, o agent.Outcome) error {
	j := struct {
		Decision   string `json:"decision"`
		Rule       string `json:"rule,omitempty"`
		Reason     string `json:"reason,omitempty"`
		ExitCode   int    `json:"exit_code"`
		TimedOut   bool   `json:"timed_out"`
		OOMKilled  bool   `json:"oom_killed,omitempty"`
		DurationMS int64  `json:"duration_ms"`
		Output     string `json:"output"`
		Encoding   string `json:"output_encoding,omitempty"`
		Bytes      int64  `json:"output_bytes"`
		SHA256     string `json:"output_sha256,omitempty"`
		Truncated  bool   `json:"truncated"`
		// What the executor stopped and undid.
		DeniedExecs []sandbox.DeniedExec `json:"denied_execs,omitempty"`
		Alarms      []sandbox.Alarm      `json:"alarms,omitempty"`
	}{Decision: o.Decision, Rule: o.Rule, Reason: o.Reason, ExitCode: o.ExitCode, TimedOut: o.TimedOut, OOMKilled: o.OOMKilled,
		DurationMS: o.Duration.Milliseconds(), Output: string(o.Output), Bytes: o.OutBytes, SHA256: o.OutSHA256, Truncated: o.Truncated,
		DeniedExecs: o.DeniedExecs, Alarms: o.Alarms}
	if !utf8.Valid(o.Output) {
		j.Output, j.Encoding = base64.StdEncoding.EncodeToString(o.Output), "base64"
	}
	if o.Denied {
		j.ExitCode = statusExitCode(agent.StatusDenied)
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}
