package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// fakeExecutor answers hello, then answers each exec with out (as Out
// frames carrying the exec's id) and a final response.
func fakeExecutor(t *testing.T, out []OutChunk) (*Client, *atomic.Int32) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var kills atomic.Int32
	c := NewClient(Transport{
		Stream: struct {
			io.Reader
			io.Writer
		}{outR, inW},
		Kill: func(context.Context) error { kills.Add(1); return nil },
	})
	go func() {
		defer outW.Close()
		hello, err := ReadRequest(inR, nil)
		if err != nil {
			return
		}
		key := hello.Key
		_ = WriteResponse(outW, key, &Response{ID: hello.ID, Protocol: Protocol})
		for {
			req, err := ReadRequest(inR, key)
			if err != nil {
				return
			}
			for i := range out {
				_ = WriteResponse(outW, key, &Response{ID: req.ID, Out: &out[i]})
			}
			_ = WriteResponse(outW, key, &Response{ID: req.ID, Output: []byte("capped")})
		}
	}()
	t.Cleanup(func() { inW.Close(); outR.Close(); c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Hello(ctx, 1024, false); err != nil {
		t.Fatal(err)
	}
	return c, &kills
}

// Out frames reach the caller's writers, stdout and stderr apart; a
// writer that failed gets nothing more and the exec still succeeds.
func TestClientStreamsOutput(t *testing.T) {
	chunks := []OutChunk{{StreamStdout, []byte("one ")}, {StreamStderr, []byte("err")}, {StreamStdout, []byte("two")}}
	c, _ := fakeExecutor(t, chunks)
	var stdout, stderr bytes.Buffer
	res, err := c.Exec(context.Background(), sandbox.ExecRequest{Command: "x", Stdout: &stdout, Stderr: &stderr})
	if err != nil || string(res.Output) != "capped" {
		t.Fatalf("exec: %v %q", err, res.Output)
	}
	if stdout.String() != "one two" || stderr.String() != "err" {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	fw := &failingWriter{}
	if _, err := c.Exec(context.Background(), sandbox.ExecRequest{Command: "x", Stdout: fw}); err != nil {
		t.Fatalf("a failing writer fails the exec: %v", err)
	}
	if fw.calls != 1 {
		t.Errorf("a failed writer was written %d times, want 1", fw.calls)
	}
}

type failingWriter struct{ calls int }

func (f *failingWriter) Write([]byte) (int, error) { f.calls++; return 0, errors.New("closed pipe") }

// An Out frame for an exec that did not ask for streaming is not ours:
// the client fails closed and kills the sandbox.
func TestClientRefusesUnaskedOutput(t *testing.T) {
	c, kills := fakeExecutor(t, []OutChunk{{StreamStdout, []byte("forged")}})
	_, err := c.Exec(context.Background(), sandbox.ExecRequest{Command: "x"})
	if !errors.Is(err, sandbox.ErrExecutor) || kills.Load() != 1 {
		t.Fatalf("want ErrExecutor and a kill, got %v (%d kills)", err, kills.Load())
	}
}

// A client that fails keeps reading (and dropping) frames: an engine kills
// a container only once its output is read, so a stalled stream would
// stall the kill. The kill here waits for the executor to get frames out.
func TestClientDrainsWhileKilling(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // unbuffered: a write waits for a reader
	var written atomic.Int64
	killed := make(chan error, 1)
	c := NewClient(Transport{
		Stream: struct {
			io.Reader
			io.Writer
		}{outR, inW},
		Kill: func(context.Context) error {
			start := written.Load()
			deadline := time.Now().Add(10 * time.Second)
			for written.Load() < start+50 {
				if time.Now().After(deadline) {
					killed <- errors.New("the stream stalled during the kill")
					return errors.New("stalled")
				}
				time.Sleep(time.Millisecond)
			}
			killed <- nil
			return nil
		},
	})
	stop := make(chan struct{})
	go func() {
		defer outW.Close()
		hello, err := ReadRequest(inR, nil)
		if err != nil {
			return
		}
		_ = WriteResponse(outW, hello.Key, &Response{ID: hello.ID, Protocol: Protocol})
		req, err := ReadRequest(inR, hello.Key)
		if err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			if WriteResponse(outW, hello.Key, &Response{ID: req.ID, Out: &OutChunk{StreamStdout, []byte("y\n")}}) != nil {
				return
			}
			written.Add(1)
		}
	}()
	t.Cleanup(func() { close(stop); inW.Close(); outR.Close(); c.Close() })
	if err := c.Hello(context.Background(), 1024, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	w := writerFunc(func(p []byte) (int, error) {
		if n++; n == 10 {
			cancel() // the caller gives up mid-stream
		}
		return len(p), nil
	})
	_, err := c.Exec(ctx, sandbox.ExecRequest{Command: "yes", Stdout: w})
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
