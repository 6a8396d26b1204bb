package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// roundTripStream writes payload on a new stream, half-closes, and
// returns what came back.
func roundTripStream(f *fakeExec, payload []byte) ([]byte, error) {
	s, err := f.mux.Open()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	werr := make(chan error, 1)
	go func() {
		_, err := s.Write(payload)
		if err == nil {
			err = s.(interface{ CloseWrite() error }).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(s)
	if err != nil {
		return got, err
	}
	return got, <-werr
}

// Many streams at once, each larger than the window, through a real echo
// server, while execs keep being answered; nothing is left after Close.
func TestChannelManyStreams(t *testing.T) {
	c, f := startChannel(t, echoDial(t))
	var wg sync.WaitGroup
	errs := make(chan error, MaxStreams)
	for i := range MaxStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, 3*StreamWindow+i*1000)
			rand.Read(payload)
			got, err := roundTripStream(f, payload)
			if err == nil && !bytes.Equal(got, payload) {
				err = fmt.Errorf("stream %d: %d bytes back of %d", i, len(got), len(payload))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	for i := range 5 {
		execWithin(t, c, 20*time.Second, fmt.Sprintf("echo %d", i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	testEventually(t, "every stream counted out on both sides", func() bool { return f.mux.count() == 0 && c.relay.mux.count() == 0 })
	if f.killed.Load() != 0 {
		t.Error("the sandbox was killed")
	}
	c.Close()
	waitGoroutines(t)
}

// A stream whose proxy never reads fills its window and stops; execs,
// heartbeats and other streams go on.
func TestChannelStuckStreamDoesNotBlockExec(t *testing.T) {
	echo := echoDial(t)
	var stuck atomic.Bool
	var held []net.Conn
	var mu sync.Mutex
	c, f := startChannel(t, func(ctx context.Context) (net.Conn, error) {
		if stuck.CompareAndSwap(false, true) {
			a, b := net.Pipe() // nobody reads b: writes to a block
			mu.Lock()
			held = append(held, b)
			mu.Unlock()
			return a, nil
		}
		return echo(ctx)
	})
	s, err := f.mux.Open()
	if err != nil {
		t.Fatal(err)
	}
	var wrote atomic.Int64
	go func() {
		chunk := make([]byte, 4096)
		for {
			n, err := s.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	// The writer stops at the window (plus what the relay's buffers took).
	testEventually(t, "the stuck stream's writer to stop", func() bool {
		before := wrote.Load()
		time.Sleep(50 * time.Millisecond)
		return before > 0 && wrote.Load() == before
	})
	if w := wrote.Load(); w > 2*StreamWindow+StreamChunk {
		t.Errorf("the stuck stream took %d bytes, over its bounds", w)
	}
	for i := range 20 {
		execWithin(t, c, 10*time.Second, fmt.Sprintf("echo %d", i))
	}
	payload := bytes.Repeat([]byte("x"), 2*StreamWindow)
	if got, err := roundTripStream(f, payload); err != nil || !bytes.Equal(got, payload) {
		t.Errorf("a second stream beside the stuck one: %d bytes, %v", len(got), err)
	}
	// The session's end ends the stuck stream too.
	c.Close()
	waitGoroutines(t)
	if _, err := s.Write([]byte("x")); err == nil {
		t.Error("the stuck stream still takes writes after the session ended")
	}
	mu.Lock()
	for _, b := range held {
		b.Close()
	}
	mu.Unlock()
}

// A data frame with a bad MAC, and a genuine one sent again, each kill
// the sandbox and end the channel: the open streams fail and so does the
// next call.
func TestChannelForgedOrReplayedFrameKills(t *testing.T) {
	for _, how := range []string{"forged", "replayed"} {
		t.Run(how, func(t *testing.T) {
			c, f := startChannel(t, echoDial(t))
			s, err := f.mux.Open()
			if err != nil {
				t.Fatal(err)
			}
			hs := waitHostStream(t, c)
			if _, err := s.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "forged":
				var buf bytes.Buffer
				WriteResponse(&buf, []byte("not-the-session-key-0123456789ab"), &Response{Seq: f.seq + 1, Stream: &StreamFrame{ID: 1, Kind: StreamData, Data: []byte("evil")}})
				f.raw(buf.Bytes())
			case "replayed":
				f.wmu.Lock()
				again := bytes.Clone(f.last)
				f.wmu.Unlock()
				f.raw(again)
			}
			testEventually(t, "the sandbox killed", func() bool { return f.killed.Load() > 0 })
			if _, err := io.ReadAll(hs); err == nil {
				t.Error("the host side of the stream ended cleanly")
			}
			_, err = c.Exec(context.Background(), sandbox.ExecRequest{Command: "true"})
			if !errors.Is(err, sandbox.ErrExecutor) {
				t.Errorf("exec after a %s frame: %v, want ErrExecutor", how, err)
			}
		})
	}
}

// waitHostStream returns the host's side of the first stream.
func waitHostStream(t *testing.T, c *Client) *streamConn {
	t.Helper()
	var s *streamConn
	testEventually(t, "the host to see the stream", func() bool {
		c.relay.mux.mu.Lock()
		defer c.relay.mux.mu.Unlock()
		s = c.relay.mux.streams[1]
		return s != nil
	})
	return s
}

// The executor's Mux refuses streams beyond the bound; an executor that
// opens more anyway is killed.
func TestChannelStreamBound(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	c, f := startChannel(t, func(ctx context.Context) (net.Conn, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, errors.New("test: no proxy")
	})
	var open []net.Conn
	for range MaxStreams {
		s, err := f.mux.Open()
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	if _, err := f.mux.Open(); !errors.Is(err, ErrTooManyStreams) {
		t.Fatalf("stream %d: %v, want ErrTooManyStreams", MaxStreams+1, err)
	}
	// A closed stream frees its place.
	open[0].Close()
	s, err := f.mux.Open()
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	execWithin(t, c, 10*time.Second, "still fine")
	if f.killed.Load() != 0 {
		t.Fatal("killed for keeping to the bound")
	}
	// Past the bound, bypassing the Mux.
	f.sendRaw(&StreamFrame{ID: s.(*streamConn).id + 1, Kind: StreamOpen})
	testEventually(t, "the sandbox killed", func() bool { return f.killed.Load() > 0 })
}

// A proxy that cannot be dialed refuses the connection with a 502; a
// stream that ends without a byte dials nothing.
func TestChannelDialFailureRefuses(t *testing.T) {
	var dials atomic.Int32
	c, f := startChannel(t, func(context.Context) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("proxy down")
	})
	s, _ := f.mux.Open()
	s.Close()
	got, err := roundTripStream(f, []byte("CONNECT example.com:443 HTTP/1.1\r\n\r\n"))
	if err != nil && !errors.Is(err, errPeerClosed) {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 502 ") || !strings.Contains(string(got), "proxy down") {
		t.Errorf("refusal: %q", got)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1 (the silent stream dials nothing)", n)
	}
	execWithin(t, c, 10*time.Second, "after")
}

// An executor that sends past its window loses that stream, not the
// session.
func TestChannelOverrunClosesStreamOnly(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	c, f := startChannel(t, func(ctx context.Context) (net.Conn, error) {
		a, b := net.Pipe() // never read: the window fills
		go func() {
			select {
			case <-block:
			case <-ctx.Done():
			}
			b.Close()
		}()
		return a, nil
	})
	f.lenient = true // it grants credit for data its Mux did not send
	s, _ := f.mux.Open()
	chunk := bytes.Repeat([]byte("y"), StreamChunk)
	for range StreamWindow/StreamChunk + 2 {
		f.sendRaw(&StreamFrame{ID: 1, Kind: StreamData, Data: chunk})
	}
	if _, err := io.ReadAll(s); !errors.Is(err, errPeerClosed) {
		t.Errorf("overrun stream: %v, want it closed by the host", err)
	}
	execWithin(t, c, 10*time.Second, "session alive")
	if f.killed.Load() != 0 {
		t.Error("an overrun killed the session")
	}
}

// Frames that do not belong are protocol violations: the sandbox is
// killed.
func TestChannelBadStreamFrames(t *testing.T) {
	for name, sf := range map[string]*StreamFrame{
		"never opened":   {ID: 7, Kind: StreamData, Data: []byte("x")},
		"out of order":   {ID: 3, Kind: StreamOpen},
		"unknown kind":   {ID: 1, Kind: "teleport"},
		"empty data":     {ID: 1, Kind: StreamData},
		"excess credit":  {ID: 1, Kind: StreamCredit, Credit: 1},
		"open w/ target": {ID: 2, Kind: StreamOpen, Data: []byte("evil.example:22")},
	} {
		t.Run(name, func(t *testing.T) {
			c, f := startChannel(t, echoDial(t))
			if _, err := f.mux.Open(); err != nil {
				t.Fatal(err)
			}
			f.sendRaw(sf)
			testEventually(t, "the sandbox killed", func() bool { return f.killed.Load() > 0 })
			if _, err := c.Exec(context.Background(), sandbox.ExecRequest{Command: "x"}); err == nil {
				t.Error("exec after a bad stream frame succeeded")
			}
		})
	}
}

// A stream frame to a client without a proxy channel kills the sandbox.
func TestChannelUnsolicitedStream(t *testing.T) {
	hostEnd, execEnd := net.Pipe()
	var killed atomic.Int32
	c := NewClient(Transport{Stream: hostEnd, Kill: func(context.Context) error { killed.Add(1); return nil }})
	defer c.Close()
	defer execEnd.Close()
	go WriteResponse(execEnd, c.key, &Response{Seq: 1, Stream: &StreamFrame{ID: 1, Kind: StreamOpen}})
	testEventually(t, "the sandbox killed", func() bool { return killed.Load() > 0 })
}

// A frame reflected back in the other direction does not decode.
func TestChannelReflectedFrames(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var buf bytes.Buffer
	WriteRequest(&buf, key, &Request{ID: 5, Op: OpStream, Stream: &StreamFrame{ID: 1, Kind: StreamData, Data: []byte("x")}})
	if _, err := ReadResponse(bytes.NewReader(buf.Bytes()), key); err == nil {
		t.Error("a host stream frame decoded as a response")
	}
	buf.Reset()
	WriteResponse(&buf, key, &Response{Seq: 5, Stream: &StreamFrame{ID: 1, Kind: StreamData, Data: []byte("x")}})
	if _, err := ReadRequest(bytes.NewReader(buf.Bytes()), key); err == nil {
		t.Error("an executor stream frame decoded as a request")
	}
}

// A transport with DialProxy refuses a socket too, and any network mode
// but proxy (a backend's mistake must not open egress).
func TestChannelMisuseRefused(t *testing.T) {
	for _, tc := range []struct {
		network sandbox.NetworkMode
		socket  string
	}{{sandbox.NetworkProxy, "/run/x.sock"}, {sandbox.NetworkNone, ""}, {"", ""}, {sandbox.NetworkOpen, ""}} {
		hostEnd, execEnd := net.Pipe()
		c := NewClient(Transport{Stream: hostEnd, DialProxy: echoDial(t)})
		if err := c.HelloConfig(context.Background(), sandbox.Config{Network: tc.network}, tc.socket); !errors.Is(err, sandbox.ErrConfig) {
			t.Errorf("network %q socket %q: %v, want ErrConfig", tc.network, tc.socket, err)
		}
		c.Close()
		execEnd.Close()
	}
}

func testEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
