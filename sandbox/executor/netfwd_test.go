package executor

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// echoHost stands in for the host-side proxy: it echoes each stream and
// half-closes.
func echoHost(t *testing.T) string {
	t.Helper()
	ln := listenLoopback(t)
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
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func startForward(t *testing.T, carry func(context.Context, net.Conn)) (addr string, cancel func()) {
	t.Helper()
	ln := listenLoopback(t)
	ctx, cancelCtx := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeForward(ctx, ln, carry) }()
	var once sync.Once
	cancel = func() {
		once.Do(func() {
			cancelCtx()
			if err := <-done; err != nil {
				t.Errorf("ServeForward: %v", err)
			}
		})
	}
	t.Cleanup(cancel)
	return ln.Addr().String(), cancel
}

func dialTCP(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d, want at most %d", runtime.NumGoroutine(), base)
		}
		time.Sleep(time.Millisecond) // polling interval
	}
}

func TestForwardCarriesBothWays(t *testing.T) {
	host := echoHost(t)
	addr, _ := startForward(t, CarryTo(dialTCP(host)))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			msg := strings.Repeat(string(rune('a'+i)), 1<<20)
			go func() {
				io.WriteString(c, msg)
				c.(*net.TCPConn).CloseWrite()
			}()
			b, err := io.ReadAll(c)
			if err != nil || string(b) != msg {
				t.Errorf("connection %d: %d bytes back, %v", i, len(b), err)
			}
		}()
	}
	wg.Wait()
}

func TestForwardHostUnreachable(t *testing.T) {
	addr, _ := startForward(t, CarryTo(func(context.Context) (net.Conn, error) { return nil, errors.New("no channel") }))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 502 {
		t.Fatalf("%v %v", resp, err)
	}
}

// TestForwardCancel: ending the context closes the listener and every
// open connection, and leaves no goroutine.
func TestForwardCancel(t *testing.T) {
	host := echoHost(t)
	base := runtime.NumGoroutine()
	addr, cancel := startForward(t, CarryTo(dialTCP(host)))
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "x")
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	cancel()
	for _, c := range conns {
		if _, err := io.ReadAll(c); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Logf("read after cancel: %v", err)
		}
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener outlived ServeForward")
	}
	waitGoroutines(t, base)
}

func TestProxyEnv(t *testing.T) {
	env := ProxyEnv()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if env[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s=%q", k, env[k])
		}
	}
	if env["NO_PROXY"] != env["no_proxy"] || strings.Contains(env["NO_PROXY"], "*") {
		t.Errorf("NO_PROXY=%q no_proxy=%q", env["NO_PROXY"], env["no_proxy"])
	}
}
