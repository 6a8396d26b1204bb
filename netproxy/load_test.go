package netproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
)

const hundredMB = 100 << 20

func TestTransfer100MB(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB transfer")
	}
	port := tcpServer(t, source(hundredMB))
	h := startProxy(t, `network: {allow: ["big.test", "127.0.0.1"]}`, map[string][]netip.Addr{"big.test": loopback})
	c, br, resp := rawRequest(t, h.addr, "CONNECT "+hostport("big.test", port)+" HTTP/1.1\n")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body(t, resp))
	}
	n, err := io.Copy(io.Discard, br)
	c.Close()
	if err != nil || n != hundredMB {
		t.Fatalf("received %d bytes, %v", n, err)
	}
	if e := h.waitEvents(t, 1)[0]; e.BytesDown != hundredMB || e.Err != "" {
		t.Errorf("event %+v", e)
	}
}

func TestUpload100MBHalfClose(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB transfer")
	}
	// The upstream reads everything, then answers with the count: the
	// client's half-close must reach it while the other direction stays open.
	port := tcpServer(t, func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		fmt.Fprint(c, n)
	})
	h := startProxy(t, `network: {allow: ["127.0.0.1"]}`, nil)
	c, br, resp := rawRequest(t, h.addr, "CONNECT "+hostport("127.0.0.1", port)+" HTTP/1.1\n")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body(t, resp))
	}
	if _, err := io.CopyN(c, zeros{}, hundredMB); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(br)
	if err != nil || string(b) != fmt.Sprint(hundredMB) {
		t.Fatalf("upstream counted %q, %v", b, err)
	}
	if e := h.waitEvents(t, 1)[0]; e.BytesUp != hundredMB || e.BytesDown != int64(len(b)) {
		t.Errorf("event %+v", e)
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

func TestParallel50(t *testing.T) {
	port := tcpServer(t, echo)
	h := startProxy(t, `network: {allow: ["echo.test", "127.0.0.1"]}`, map[string][]netip.Addr{"echo.test": loopback})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := fmt.Sprintf("hello %d", i)
			fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n%s", port, msg)
			c.(*net.TCPConn).CloseWrite()
			b, err := io.ReadAll(c)
			want := "HTTP/1.1 200 Connection established\r\n\r\n" + msg
			if err != nil || string(b) != want {
				errs <- fmt.Errorf("connection %d: got %q, %v", i, b, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	evs := h.waitEvents(t, 50)
	if len(evs) != 50 {
		t.Errorf("%d events", len(evs))
	}
	for _, e := range evs {
		if e.Decision != Allow || e.BytesUp != e.BytesDown || e.BytesUp < 7 {
			t.Errorf("event %+v", e)
		}
	}
}

// TestClientVanishes: the client goes away in the middle of an endless
// download; the connection's goroutines and both sockets must go too.
func TestClientVanishes(t *testing.T) {
	port := tcpServer(t, func(c net.Conn) { io.Copy(c, zeros{}) })
	h := startProxy(t, `network: {allow: ["127.0.0.1"]}`, nil)
	base := runtime.NumGoroutine()
	for _, how := range []string{"close", "reset"} {
		c, br, resp := rawRequest(t, h.addr, "CONNECT "+hostport("127.0.0.1", port)+" HTTP/1.1\n")
		if resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
		if _, err := io.CopyN(io.Discard, br, 1<<20); err != nil {
			t.Fatal(err)
		}
		if how == "reset" {
			c.(*net.TCPConn).SetLinger(0)
		}
		c.Close()
	}
	evs := h.waitEvents(t, 2)
	for _, e := range evs {
		if e.BytesDown < 1<<20 {
			t.Errorf("event %+v", e)
		}
	}
	waitGoroutines(t, base)
}

// TestCancelEndsEverything: ending the context ends Serve, every tunnel and
// every goroutine, with one event per connection.
func TestCancelEndsEverything(t *testing.T) {
	port := tcpServer(t, func(c net.Conn) { io.Copy(c, c) })
	h := &harness{got: make(chan struct{}, 1)}
	p, err := New(Config{Policy: mustPolicy(t, `network: {allow: ["127.0.0.1"]}`), OnEvent: func(e Event) {
		h.mu.Lock()
		h.evs = append(h.evs, e)
		h.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	var conns []net.Conn
	for range 5 {
		c, _, resp := rawRequest(t, ln.Addr().String(), "CONNECT "+hostport("127.0.0.1", port)+" HTTP/1.1\n")
		if resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
		conns = append(conns, c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(h.events()); n != 5 {
		t.Errorf("%d events after Serve returned, want 5", n)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener outlived Serve")
	}
	for _, c := range conns {
		if _, err := io.ReadAll(c); err != nil {
			t.Logf("client read after cancel: %v", err)
		}
		c.Close()
	}
	waitGoroutines(t, base)
}
