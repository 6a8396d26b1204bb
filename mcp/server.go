// Package mcp is agentbox's Model Context Protocol front-end: it serves the
// sandboxed tools (execute_bash, read_file, write_file) to any MCP client
// over stdio, through the same pipeline as `agentbox run` (policy,
// approval, audit, sandbox, audit). One MCP connection is one agentbox
// session: one sandbox, started for the first tool call (or when the client
// has initialized, with StartOnInitialize) and removed when the connection
// ends: stdin closes, the context ends (SIGINT/SIGTERM), or the client
// process dies.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StartAt says when a connection's sandbox starts.
type StartAt string

// When the sandbox starts.
const (
	StartOnInitialize StartAt = "initialize" // in the background once the client has initialized (default)
	StartOnFirstCall  StartAt = "first-call" // the first tool call pays for the start
)

// Valid reports whether s is a known start point.
func (s StartAt) Valid() bool { return s == StartOnFirstCall || s == StartOnInitialize }

// Config is one MCP server: what `agentbox mcp` was given.
type Config struct {
	Policy  *policy.Policy
	Sandbox sandbox.Config // the session configuration (workspace, network, ...)
	Runtime sandbox.Runtime
	Audit   agent.RedactingLog
	// Fallback answers the policy's ask when the client cannot be asked
	// (it declares no elicitation capability). Nil denies (decided_by
	// no-terminal).
	Fallback agent.Approver
	Start    StartAt // "" = StartOnInitialize
	Version  string  // agentbox's, for the client and the audit log
	// In and Out carry the protocol (stdin and stdout). Nothing else may
	// write to Out.
	In  io.ReadCloser
	Out io.WriteCloser
	// Mode is the workspace mode ("" = the policy's; a backend without
	// host mounts works on a copy whose changes wait for review).
	Mode sandbox.WorkspaceMode
	// Notice receives what the user should know about the session (the
	// copy, its pending changes); nil = nowhere. Never stdout.
	Notice func(string)
	// Log receives diagnostics (stderr); nil = slog.Default().
	Log *slog.Logger
	// ParentPoll is how often the parent process is checked; when it is
	// gone (the client died without closing stdin) the connection ends.
	// 0 = every 500ms; negative = never.
	ParentPoll time.Duration
	// NoStaging: an rw session lets the sandbox write into the workspace
	// directly instead of staging each call's changes and promoting them
	// on the host (AGENTBOX_STAGING=off).
	NoStaging bool
	// Setup are commands run once the sandbox has started, before any
	// tool call of the client, each an ordinary execute_bash call (a
	// devcontainer's lifecycle commands; the policy's ask is answered by
	// Fallback). One that fails ends the session: every call is then
	// refused with the reason.
	Setup []string
}

// Serve serves one MCP connection over cfg.In/cfg.Out until the client
// closes it, the client process dies, or ctx ends. The connection's
// sandbox is removed and its session_end recorded before Serve returns.
// It returns nil when the client closed the connection, ctx's cause when
// ctx ended.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Policy == nil || cfg.Runtime == nil || cfg.Audit == nil || cfg.In == nil || cfg.Out == nil {
		return errors.New("mcp.Serve: Policy, Runtime, Audit, In and Out are required")
	}
	if cfg.Start == "" {
		cfg.Start = StartOnInitialize
	}
	if !cfg.Start.Valid() {
		return fmt.Errorf("%w: start %q: want %s or %s", sandbox.ErrConfig, cfg.Start, StartOnFirstCall, StartOnInitialize)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	// A client that dies makes writes to stdout fail: they must return
	// EPIPE, not kill agentbox before it removes the sandbox.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c, err := newConn(ctx, cfg)
	if err != nil {
		return err
	}
	// The SDK waits for running handlers before Run returns: they must
	// end as soon as the connection does.
	defer context.AfterFunc(connCtx, c.stop)()
	srv := sdk.NewServer(&sdk.Implementation{Name: "agentbox", Title: "agentbox sandbox", Version: cfg.Version},
		&sdk.ServerOptions{
			Instructions: "The tools run in a disposable, hardened Linux sandbox under a policy, and every call is recorded in an audit log. A denied call returns the reason; do not try to work around it.",
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		})
	for _, def := range c.tools.Definitions() {
		f := def.Function
		srv.AddTool(&sdk.Tool{Name: f.Name, Description: f.Description, InputSchema: f.Parameters}, c.handler(f.Name))
	}
	if cfg.Start == StartOnInitialize {
		srv.AddReceivingMiddleware(c.startWhenInitialized)
	}
	parentDone := watchParent(connCtx, cfg.ParentPoll)
	go func() {
		select {
		case <-parentDone:
			cfg.Log.Warn("agentbox mcp: the client process is gone; ending the session")
			cancel(errClientGone)
		case <-connCtx.Done():
		}
	}()

	t := newLineTransport(cfg.In, cfg.Out)
	c.inputEnded = t.ended
	err = srv.Run(connCtx, t)
	cause := context.Cause(connCtx)
	cancel(errConnClosed)
	interrupted := ctx.Err() != nil
	if cerr := c.shutdown(context.WithoutCancel(ctx), interrupted); cerr != nil {
		cfg.Log.Error("agentbox mcp: ending the session", "err", cerr)
		if err == nil || errors.Is(err, io.EOF) {
			err = cerr
		}
	}
	switch {
	case interrupted:
		return context.Cause(ctx)
	case errors.Is(cause, errClientGone):
		return nil
	case err != nil && (errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || isClosed(err)):
		return nil
	}
	return err
}

var (
	errClientGone = errors.New("the MCP client process is gone")
	errConnClosed = errors.New("the MCP connection is closed")
)

// isClosed reports an error that only says the connection ended.
func isClosed(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE)
}

// watchParent returns a channel closed when the parent process is gone
// (it changed: the orphan was adopted); it checks every poll until ctx
// ends.
func watchParent(ctx context.Context, poll time.Duration) <-chan struct{} {
	done := make(chan struct{})
	if poll < 0 {
		return done
	}
	if poll == 0 {
		poll = 500 * time.Millisecond
	}
	parent := os.Getppid()
	if parent <= 1 {
		return done // started by init, or already orphaned: nothing to watch
	}
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					close(done)
					return
				}
			}
		}
	}()
	return done
}
