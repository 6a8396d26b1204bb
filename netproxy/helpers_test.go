package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/netutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// stubResolver maps test names to addresses and counts lookups.
type stubResolver struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
	calls int
}

var _ Resolver = (*stubResolver)(nil)

func (r *stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	a, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), a...), nil
}

var loopback = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

// harness is a running proxy on loopback with its events.
type harness struct {
	addr string
	res  *stubResolver
	mu   sync.Mutex
	evs  []Event
	got  chan struct{}
	// origin is what the executor reports for the next connections (nil:
	// unknown, as over the mounted socket).
	origin atomic.Pointer[sandbox.Origin]
}

func (h *harness) events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.evs...)
}

// waitEvents waits until n events have been reported and returns them.
func (h *harness) waitEvents(t testing.TB, n int) []Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if evs := h.events(); len(evs) >= n {
			return evs
		}
		select {
		case <-h.got:
		case <-deadline:
			t.Fatalf("want %d events, have %d: %+v", n, len(h.events()), h.events())
		}
	}
}

func startProxy(t testing.TB, netYAML string, names map[string][]netip.Addr, mod ...func(*Config)) *harness {
	t.Helper()
	pol := mustPolicy(t, netYAML)
	h := &harness{res: &stubResolver{names: names}, got: make(chan struct{}, 1)}
	cfg := Config{Policy: pol, Resolver: h.res, OnEvent: func(e Event) {
		h.mu.Lock()
		h.evs = append(h.evs, e)
		h.mu.Unlock()
		select {
		case h.got <- struct{}{}:
		default:
		}
	}}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- netutil.ServeEach(ctx, ln, "test proxy", func(ctx context.Context, c net.Conn) {
			p.ServeConnFrom(ctx, c, h.origin.Load())
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

// rawRequest sends head (with \r\n line ends added) to the proxy and
// returns the connection, a reader on it and the parsed response head.
func rawRequest(t testing.TB, proxy, head string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head = strings.ReplaceAll(head, "\n", "\r\n") + "\r\n"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.SplitN(head, " ", 2)[0]})
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", head, err)
	}
	return c, br, resp
}

// body reads a refusal's one-line body.
func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tcpServer runs fn for every connection accepted on loopback until the
// test ends.
func tcpServer(t testing.TB, fn func(net.Conn)) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				fn(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// source writes n bytes then closes.
func source(n int64) func(net.Conn) {
	return func(c net.Conn) {
		n := n
		buf := make([]byte, 256<<10)
		for n > 0 {
			k := min(int64(len(buf)), n)
			if _, err := c.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	}
}

// echo copies what it reads back, then half-closes.
func echo(c net.Conn) {
	io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
}

// waitGoroutines polls until the goroutine count is back to at most base.
func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // polling interval, not a wait for an event
	}
}

func mustPolicy(t testing.TB, netYAML string) *policy.Policy {
	t.Helper()
	pol, err := policy.Parse("test.yaml", []byte("version: 1\nextends: none\nsandbox: {network: proxy}\n"+netYAML))
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func hostport(host string, port int) string { return fmt.Sprintf("%s:%d", host, port) }

// netReplayer replays net events with a policy (tool calls: deny; the
// agent package's ReplayDecider does both).
type netReplayer struct{ *policy.Policy }

func (netReplayer) DecideCall(string, map[string]any) (string, string) { return "deny", "test" }
