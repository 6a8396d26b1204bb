package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one MCP connection: one agentbox session, one sandbox. Tool
// calls run one at a time (the pipeline is not for overlapping calls); a
// client that sends several in parallel has them queued.
type conn struct {
	cfg   Config
	id    string // the session id: audit log, container label
	tools *agent.Tools
	asks  *askState
	done  chan struct{} // closed when the connection ends: calls stop
	// inputEnded is closed when the client's input ended (it is going).
	inputEnded <-chan struct{}
	stop       func() // closes done, once

	startOnce sync.Once
	bg        sync.WaitGroup // the background start (StartOnInitialize)

	mu     sync.Mutex // one call at a time; guards what follows
	s      *session.Session
	sess   sandbox.Session
	client *sdk.Implementation
	broken error // the sandbox or the audit log failed: nothing more runs
	cut    bool  // a call was cut short by the end of the connection
	closed bool
	calls  int
}

func newConn(ctx context.Context, cfg Config) (*conn, error) {
	// Exec-time asks have no approver here (nil denies them); asks of the
	// up-front check go through elicitation or --approve.
	s, err := session.Open(ctx, cfg.Runtime, session.Options{
		Policy: cfg.Policy, Sandbox: cfg.Sandbox, Mode: cfg.Mode, Audit: cfg.Audit, Lazy: true,
		NoOverlay: os.Getenv("AGENTBOX_OVERLAY") == "off", NoStaging: cfg.NoStaging,
		Record: session.Record{Version: cfg.Version}, Notice: cfg.Notice,
	})
	if err != nil {
		return nil, err
	}
	c := &conn{cfg: cfg, id: s.ID(), s: s, tools: s.Tools(), asks: newAskState(), done: make(chan struct{})}
	c.stop = sync.OnceFunc(func() { close(c.done) })
	return c, nil
}

// ensure starts the sandbox and records session_start, once; the caller
// holds c.mu. A failed start is reported to the caller and tried again on
// the next call (the user may have built the missing image meanwhile).
func (c *conn) ensure(ctx context.Context, client *sdk.Implementation) error {
	if c.sess != nil {
		return nil
	}
	if c.client == nil && client != nil {
		c.client = client
	}
	c.s.Describe("MCP session for "+clientName(c.client), "mcp-client:"+clientName(c.client))
	sess, err := c.s.Start(ctx)
	if err != nil {
		if errors.Is(err, session.ErrAudit) {
			c.broken = err
		}
		return err
	}
	c.sess = sess
	c.cfg.Log.Debug("agentbox mcp: sandbox started", "session", c.id, "container", sess.Info().ContainerID, "client", clientName(c.client))
	return c.setup(ctx)
}

// setup runs the configured setup commands in the new sandbox, under the
// policy and in the audit log; the caller holds c.mu. A failure breaks the
// session: nothing of the client's runs in a sandbox that is not set up.
func (c *conn) setup(ctx context.Context) error {
	if len(c.cfg.Setup) == 0 {
		return nil
	}
	c.tools.Approver = c.cfg.Fallback
	if c.tools.Approver == nil {
		c.tools.Approver = denyUnasked{}
	}
	_, err := c.tools.Setup(ctx, c.cfg.Setup, nil)
	c.tools.Approver = nil
	if err != nil {
		c.broken = fmt.Errorf("the devcontainer's lifecycle commands failed: %w", err)
		return c.broken
	}
	return nil
}

// startWhenInitialized starts the sandbox in the background as soon as the
// client has identified itself (initialize, or the first request of the
// stateless protocol), so that the first tool call finds it running.
func (c *conn) startWhenInitialized(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if !ok {
			return res, err
		}
		ip := ss.InitializeParams()
		if ip == nil {
			return res, err
		}
		c.startOnce.Do(func() {
			c.bg.Add(1)
			go func() {
				defer c.bg.Done()
				ctx, cancel := c.callContext(context.WithoutCancel(ctx))
				defer cancel(nil)
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.closed || c.broken != nil {
					return
				}
				if err := c.ensure(ctx, ip.ClientInfo); err != nil {
					c.cfg.Log.Warn("agentbox mcp: starting the sandbox", "err", err)
				}
			}()
		})
		return res, err
	}
}

// callContext is ctx, also cancelled when the connection ends.
func (c *conn) callContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-c.done:
			cancel(errConnClosed)
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// shutdown ends the session: it waits for the running call (cancelled by
// then), removes the sandbox and records session_end.
func (c *conn) shutdown(ctx context.Context, interrupted bool) error {
	c.stop()
	c.bg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	status := agent.StatusOK
	switch {
	case interrupted || c.cut:
		status = agent.StatusInterrupted
	case c.broken != nil:
		status = agent.StatusError
	}
	// No tool call: no sandbox, no session in the log (Close records
	// nothing). Else a workspace inside the sandbox comes back first, its
	// refused changes recorded as alarms; a copy waits for review.
	closed, err := c.s.Close(ctx, session.End{Status: status, Steps: c.calls, Err: c.broken})
	c.sess = nil
	switch {
	case closed.PullErr != nil:
		return closed.PullErr
	case closed.CloseErr != nil:
		return closed.CloseErr
	}
	return err
}

// call runs one tool call through the pipeline with appr answering the
// policy's ask.
func (c *conn) call(ctx context.Context, client *sdk.Implementation, name, args string, appr agent.Approver) *sdk.CallToolResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed || ctx.Err() != nil:
		return errorResult("error: the agentbox MCP server is shutting down; nothing ran.")
	case c.broken != nil:
		return errorResult(fmt.Sprintf("error: the sandbox session failed earlier (%s); nothing more runs in it. Restart the agentbox MCP server.", c.cfg.Audit.Redact(c.broken.Error())))
	}
	if err := c.ensure(ctx, client); err != nil {
		if c.broken != nil {
			return errorResult("error: " + c.cfg.Audit.Redact(err.Error()) + "; nothing ran.")
		}
		return errorResult("error: the sandbox could not be started: " + c.cfg.Audit.Redact(err.Error()) + ". Nothing ran; the next call tries again.")
	}
	c.calls++
	c.tools.Approver = appr
	o := c.tools.Call(ctx, fmt.Sprintf("mcp_%d", c.calls), name, args)
	c.tools.Approver = nil
	if o.Interrupted && c.ending() {
		c.cut = true // the connection is ending, not just this call
	}
	if o.Err != nil {
		if ctx.Err() != nil {
			c.cut = true
			return errorResult("error: the call was cancelled (the client went away or agentbox is stopping); its processes were killed.")
		}
		c.broken = o.Err
		_ = c.sess.Close(context.WithoutCancel(ctx))
		c.cfg.Log.Error("agentbox mcp: the session failed; later calls are refused", "err", o.Err)
		return errorResult(o.Text + " " + c.cfg.Audit.Redact(o.Err.Error()))
	}
	return toResult(o)
}

// ending reports whether the connection is ending (not one call
// cancelled by the client).
func (c *conn) ending() bool {
	select {
	case <-c.done:
		return true
	case <-c.inputEnded:
		return true
	default:
		return false
	}
}

// toResult is a tool result: denials, invalid calls, refused or missing
// files, timeouts and OOM kills carry isError and the reason; a command
// that exits non-zero is a result like any other (the text says the code).
func toResult(o agent.Outcome) *sdk.CallToolResult {
	r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: o.Text}}}
	r.IsError = o.Denied || o.Invalid || o.Failed || o.TimedOut || o.Interrupted || o.OOMKilled
	return r
}

func errorResult(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: true}
}

// clientName is "name version" of an MCP client (untrusted: clipped).
func clientName(impl *sdk.Implementation) string {
	if impl == nil || impl.Name == "" {
		return "an unnamed MCP client"
	}
	s := impl.Name
	if impl.Version != "" {
		s += " " + impl.Version
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
