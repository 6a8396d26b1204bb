package wire

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// fakeExec is the executor's side of the protocol over a net.Pipe: the
// real Mux for the streams, an echo for exec requests. It is the seam the
// wire tests fake; the executor's own tests run the real one.
type fakeExec struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	key  []byte
	mux  *Mux

	wmu  sync.Mutex
	seq  uint64
	last []byte // the last stream frame written, as sent (for replays)

	hello   *Request
	lenient bool // ignore protocol errors from the host (the test broke the Mux's accounting)
	killed  atomic.Int32
	execs   chan string // commands served
	done    chan struct{}
}

// startChannel connects a Client with DialProxy dial to a fakeExec and
// completes the hello.
func startChannel(t *testing.T, dial func(context.Context) (net.Conn, error)) (*Client, *fakeExec) {
	t.Helper()
	hostEnd, execEnd := net.Pipe()
	f := &fakeExec{t: t, conn: execEnd, r: bufio.NewReader(execEnd), execs: make(chan string, 100), done: make(chan struct{})}
	c := NewClient(Transport{Stream: hostEnd, DialProxy: dial, Kill: func(context.Context) error {
		f.killed.Add(1)
		execEnd.Close()
		return nil
	}})
	t.Cleanup(func() { c.Close(); execEnd.Close(); <-f.done })
	helloed := make(chan error, 1)
	go func() {
		defer close(f.done)
		hello, err := ReadRequest(f.r, nil)
		if err != nil {
			helloed <- err
			return
		}
		f.hello, f.key = hello, hello.Key
		f.mux = NewMux(f.send)
		helloed <- f.reply(&Response{ID: hello.ID, Protocol: Protocol})
		f.serve(hello.ID)
	}()
	if err := c.HelloConfig(context.Background(), sandbox.Config{Network: sandbox.NetworkProxy}, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-helloed; err != nil {
		t.Fatal(err)
	}
	if !f.hello.ProxyChannel || f.hello.Proxy != "" {
		t.Fatalf("hello: proxy_channel %v, proxy %q", f.hello.ProxyChannel, f.hello.Proxy)
	}
	return c, f
}

func (f *fakeExec) reply(resp *Response) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return WriteResponse(f.conn, f.key, resp)
}

// send is the Mux's send: a stream frame numbered by Seq.
func (f *fakeExec) send(sf *StreamFrame) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.seq++
	var buf bytes.Buffer
	if err := WriteResponse(&buf, f.key, &Response{Seq: f.seq, Stream: sf}); err != nil {
		return err
	}
	f.last = buf.Bytes()
	_, err := f.conn.Write(buf.Bytes())
	return err
}

// raw writes b as is (forged or replayed frames).
func (f *fakeExec) raw(b []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := f.conn.Write(b)
	return err
}

// sendRaw sends a stream frame outside the Mux, with the next Seq.
func (f *fakeExec) sendRaw(sf *StreamFrame) error { return f.send(sf) }

// serve reads requests in sequence: stream frames go to the Mux, an exec
// is answered with its command as output.
func (f *fakeExec) serve(last uint64) {
	defer f.mux.Close(io.EOF)
	for {
		req, err := ReadRequest(f.r, f.key)
		if err != nil {
			return
		}
		if req.ID != last+1 {
			f.t.Errorf("request %d out of sequence (want %d)", req.ID, last+1)
			return
		}
		last = req.ID
		switch req.Op {
		case OpStream:
			if err := f.mux.Deliver(req.Stream); err != nil && !f.lenient {
				f.t.Errorf("executor side: %v", err)
				return
			}
		case OpExec:
			f.execs <- req.Command
			go f.reply(&Response{ID: req.ID, Output: []byte(req.Command)})
		}
	}
}

// echoDial dials a fresh loopback echo server that half-closes at the end.
func echoDial(t *testing.T) func(context.Context) (net.Conn, error) {
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
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
}

// execWithin runs one exec and fails the test unless it answers within d.
func execWithin(t *testing.T, c *Client, d time.Duration, cmd string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := c.Exec(ctx, sandbox.ExecRequest{Command: cmd})
	if err != nil || string(res.Output) != cmd {
		t.Fatalf("exec %q: %q, %v", cmd, res.Output, err)
	}
}

// waitGoroutines polls until no goroutine of this package's channel code
// is left.
func waitGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		st := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(st, "wire.(*relay)") && !strings.Contains(st, "wire.(*Client)") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left:\n%s", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
