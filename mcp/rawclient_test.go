package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawClient is a JSON-RPC 2.0 client written from the MCP specification
// (newline-delimited JSON over stdio), independent of any MCP library: it
// can send what no library would (bad lines, bad requests) and sees every
// message the server writes.
type rawClient struct {
	t     *testing.T
	in    io.WriteCloser
	mu    sync.Mutex
	msgs  []map[string]any // everything the server wrote, in order
	lines chan struct{}
}

func newRawClient(t *testing.T, s *server) *rawClient {
	t.Helper()
	cmd := s.cmd(t)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, in: in, lines: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
			select {
			case c.lines <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agentbox mcp stderr:\n%s", stderr.String())
		}
	})
	return c
}

// send writes one raw line.
func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("writing %q: %v", line, err)
	}
}

// request sends a request and returns its id.
func (c *rawClient) request(id int, method string, params any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.send(string(b))
}

func (c *rawClient) notify(method string, params any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.send(string(b))
}

// wait returns the first message ok accepts, polling until the deadline.
func (c *rawClient) wait(what string, d time.Duration, ok func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.After(d)
	for {
		c.mu.Lock()
		for _, m := range c.msgs {
			if ok(m) {
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		select {
		case <-c.lines:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			c.t.Fatalf("no message from the server: %s; got %v", what, c.msgs)
			return nil
		}
	}
}

// response waits for the response to id.
func (c *rawClient) response(id any, d time.Duration) map[string]any {
	c.t.Helper()
	want := fmt.Sprint(id)
	return c.wait(fmt.Sprintf("the response to %v", id), d, func(m map[string]any) bool {
		_, hasMethod := m["method"]
		return !hasMethod && m["id"] != nil && fmt.Sprint(m["id"]) == want
	})
}

// errorCode is a response's error code, 0 for none.
func errorCode(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	f, _ := e["code"].(float64)
	return int(f)
}

// initialize does the handshake.
func (c *rawClient) initialize() {
	c.t.Helper()
	c.request(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-jsonrpc-client", "version": "1"}})
	if r := c.response(1, time.Minute); errorCode(r) != 0 {
		c.t.Fatalf("initialize: %v", r)
	}
	c.notify("notifications/initialized", map[string]any{})
}

// TestMCPMalformedLines: a line that is not JSON is answered -32700, JSON
// that is not a valid request -32600 (with its id when it has one), and
// the server goes on serving: on the code before, the first bad line
// ended agentbox mcp.
func TestMCPMalformedLines(t *testing.T) {
	s := newServer(t, "--start", "first-call")
	c := newRawClient(t, s)
	c.initialize()

	c.send("this is not json")
	c.wait("-32700 for a non-JSON line", time.Minute, func(m map[string]any) bool {
		return errorCode(m) == -32700 && m["id"] == nil
	})
	c.send(`{"jsonrpc":"2.0","id":7,"method":`)
	c.wait("-32700 for a truncated object", time.Minute, func(m map[string]any) bool { return errorCode(m) == -32700 })
	for i, bad := range []string{
		`{"jsonrpc":"1.0","id":21,"method":"tools/list"}`, // wrong version tag
		`{"jsonrpc":"2.0","id":22,"method":42}`,           // method not a string
		`42`,                                              // not an object
		`[]`,                                              // an empty batch
	} {
		c.send(bad)
		id := 21 + i
		c.wait(fmt.Sprintf("-32600 for %s", bad), time.Minute, func(m map[string]any) bool {
			if errorCode(m) != -32600 {
				return false
			}
			if id <= 22 {
				return fmt.Sprint(m["id"]) == fmt.Sprint(id)
			}
			return m["id"] == nil
		})
	}
	// The server still serves.
	c.request(30, "tools/list", map[string]any{})
	r := c.response(30, time.Minute)
	tools, _ := r["result"].(map[string]any)["tools"].([]any)
	if errorCode(r) != 0 || len(tools) == 0 {
		t.Fatalf("tools/list after bad lines: %v", r)
	}
	c.request(31, "no/such/method", map[string]any{})
	if r := c.response(31, time.Minute); errorCode(r) != -32601 {
		t.Errorf("unknown method: %v, want -32601", r)
	}
}
