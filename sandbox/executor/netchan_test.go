package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// pipeStream is the host's end of the executor's stdio in a test.
type pipeStream struct {
	io.Reader
	w io.WriteCloser
	r *io.PipeReader
}

func (p pipeStream) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeStream) Close() error                { p.w.Close(); return p.r.Close() }

// TestServeProxyChannel: the real executor and the real wire.Client, the
// forwarder's connections carried over the channel to a host echo server,
// beside an exec that uses one too; the session's end ends everything.
func TestServeProxyChannel(t *testing.T) {
	s := hostServer(t)
	s.proxyAddr = "127.0.0.1:0"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- s.Serve(inR, outW); outW.Close() }()
	origins := make(chan *sandbox.Origin, 16)
	c := wire.NewClient(wire.Transport{Stream: pipeStream{Reader: outR, w: inW, r: outR}, DialProxy: dialTCP(originEchoHost(t, origins))})
	defer c.Close()
	if err := c.HelloConfig(context.Background(), sandbox.Config{Network: sandbox.NetworkProxy}, ""); err != nil {
		t.Fatal(err)
	}
	addr := s.proxyAddr

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			msg := strings.Repeat(string(rune('a'+i)), 1<<20)
			go func() {
				io.WriteString(conn, msg)
				conn.(*net.TCPConn).CloseWrite()
			}()
			b, err := io.ReadAll(conn)
			if err != nil || string(b) != msg {
				t.Errorf("connection %d: %d bytes back, %v", i, len(b), err)
			}
		}()
	}
	// An open connection nobody reads does not hold up the exec.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, strings.Repeat("z", 1<<20))
	_, port, _ := net.SplitHostPort(addr)
	res, err := c.Exec(context.Background(), sandbox.ExecRequest{Command: fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%s; echo through-the-channel >&3; head -1 <&3", port), Timeout: 20 * time.Second})
	if err != nil || strings.TrimSpace(string(res.Output)) != "through-the-channel" {
		t.Errorf("exec through the channel: %q, %v", res.Output, err)
	}
	wg.Wait()
	// Each stream named its processes: the test's own (not traced: not
	// attributed) and the exec's, each holder's chain leading to the traced
	// call's bash (bash itself, its child before or after it execs head:
	// which of them holds the socket when the stream starts is timing).
	var attributed, unattributed int
	for len(origins) > 0 {
		o := <-origins
		switch {
		case o.Error != "" && len(o.Holders) == 0:
			unattributed++
		case len(o.Holders) > 0 && allFromExec(o.Holders):
			attributed++
		default:
			t.Errorf("origin %+v", o)
		}
	}
	if attributed != 1 || unattributed != 9 {
		t.Errorf("origins: %d attributed (want 1), %d not (want 9: the test's own connections)", attributed, unattributed)
	}

	c.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after the host closed")
	}
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(idle); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("a connection outlived the session")
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Error("the forwarder outlived Serve")
	}
}

// originEchoHost is echoHost for streams that start with the executor's
// origin line: it is read (and sent to origins), the rest echoed.
func originEchoHost(t *testing.T, origins chan<- *sandbox.Origin) string {
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
				br := bufio.NewReader(c)
				o, err := sandbox.ReadOrigin(br)
				if err != nil {
					t.Errorf("no origin line: %v", err)
					return
				}
				origins <- o
				io.Copy(c, br)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// allFromExec reports whether every holder's chain runs from the exec's
// traced bash.
func allFromExec(hs []sandbox.OriginProcess) bool {
	for _, h := range hs {
		if len(h.Chain) == 0 || !strings.HasPrefix(strings.Join(h.Chain[len(h.Chain)-1], " "), "bash --noprofile --norc -c exec 3<>/dev/tcp") {
			return false
		}
	}
	return true
}
