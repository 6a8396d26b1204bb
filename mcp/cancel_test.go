package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	mcpgo "github.com/mark3labs/mcp-go/client"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cancelled checks what a cancelled `sleep 300` left: its result record
// says interrupted (it can only exist once the command's processes are
// dead: the sleep had minutes to go), the sandbox is the same one, and
// the next call runs in it.
func (s *server) cancelled(t *testing.T, id string, next func() (string, bool)) {
	t.Helper()
	s.waitFor(t, "the cancelled call's interrupted result", func(r audit.Record) bool {
		return r.Event == audit.EventToolCall && r.Phase == audit.PhaseResult && strings.Contains(r.Error, "interrupted")
	})
	if containers(t, id) == "" {
		t.Fatal("the sandbox is gone after one call was cancelled")
	}
	text, isErr := next()
	if isErr || !strings.Contains(text, "after cancel") {
		t.Fatalf("the call after the cancelled one: isError %v, %q", isErr, text)
	}
	for _, r := range s.records(t) {
		if r.Event == audit.EventSessionStart && r.Session != id {
			t.Errorf("a second session %s started: the first sandbox did not survive", r.Session)
		}
		if r.Event == audit.EventSessionEnd {
			t.Errorf("the session ended at the cancel: %+v", r)
		}
	}
}

// TestMCPCancelEndsOnlyTheCall: notifications/cancelled from the MCP Go
// SDK's client (a context that ends mid-call) ends that call only; on the
// code before, it killed the sandbox and every later call failed.
func TestMCPCancelEndsOnlyTheCall(t *testing.T) {
	s := newServerWith(t, longPolicy)
	cs := s.connect(t, nil, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": "sleep 300"}})
		errc <- err
	}()
	id := s.waitSleeping(t)
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned no error to the client")
	}
	s.cancelled(t, id, func() (string, bool) {
		return call(t, cs, "execute_bash", map[string]any{"command": "echo after cancel"})
	})
	_ = cs.Close()
	waitGone(t, id)
	defer func() {
		if t.Failed() {
			for _, r := range s.records(t) {
				t.Logf("record: %s %s status=%s error=%s", r.Event, r.Phase, r.Status, r.Error)
			}
		}
	}()
	s.waitFor(t, "session_end ok", func(r audit.Record) bool {
		return r.Event == audit.EventSessionEnd && r.Session == id && r.Status == agent.StatusOK
	})
	s.verify(t)
}

// TestMCPCancelAndProgressMark3labs: the same with an independent client
// implementation (mark3labs/mcp-go), which also asks for progress: a
// long call sends notifications/progress with the client's token.
func TestMCPCancelAndProgressMark3labs(t *testing.T) {
	s := newServerWith(t, longPolicy)
	cmd := s.cmd(t)
	c, err := mcpgo.NewStdioMCPClient(cmd.Path, cmd.Env, cmd.Args[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var progress []mcpgotypes.JSONRPCNotification
	c.OnNotification(func(n mcpgotypes.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n)
			mu.Unlock()
		}
	})
	ictx, icancel := context.WithTimeout(t.Context(), time.Minute)
	defer icancel()
	init := mcpgotypes.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcpgotypes.Implementation{Name: "mark3labs-test-client", Version: "1"}
	if err := c.Start(ictx); err != nil { // wires OnNotification
		t.Fatal(err)
	}
	if _, err := c.Initialize(ictx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	callBash := func(ctx context.Context, command string, token any) (*mcpgotypes.CallToolResult, error) {
		req := mcpgotypes.CallToolRequest{}
		req.Params.Name = "execute_bash"
		req.Params.Arguments = map[string]any{"command": command}
		if token != nil {
			req.Params.Meta = &mcpgotypes.Meta{ProgressToken: token}
		}
		return c.CallTool(ctx, req)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := callBash(ctx, "sleep 300", "tok-42")
		errc <- err
	}()
	id := s.waitSleeping(t)
	// Progress arrives while the call runs.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notifications/progress for a call that asked for progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	p := progress[0].Params.AdditionalFields
	mu.Unlock()
	if p["progressToken"] != "tok-42" || !strings.Contains(p["message"].(string), "execute_bash running") {
		t.Errorf("progress notification %v", p)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned no error to the client")
	}
	s.cancelled(t, id, func() (string, bool) {
		cctx, ccancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer ccancel()
		res, err := callBash(cctx, "echo after cancel", nil)
		if err != nil {
			t.Fatalf("the call after the cancelled one: %v", err)
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(mcpgotypes.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	})
	_ = c.Close()
	waitGone(t, id)
	s.verify(t)
}
