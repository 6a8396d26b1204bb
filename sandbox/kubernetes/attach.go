package kubernetes

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// attachStream is the executor's stdio over the API server's attach
// stream: writes feed the stream's stdin, reads return its stdout.
type attachStream struct {
	inR  *io.PipeReader
	inW  *io.PipeWriter
	outR *io.PipeReader
	outW *io.PipeWriter

	mu       sync.Mutex
	deadline time.Time
	writing  bool
}

func newAttachStream() *attachStream {
	a := &attachStream{}
	a.inR, a.inW = io.Pipe()
	a.outR, a.outW = io.Pipe()
	return a
}

func (a *attachStream) Read(p []byte) (int, error) { return a.outR.Read(p) }

// Write feeds the executor's stdin, bounded by the write deadline: a
// stream that stops draining breaks for good (the client fails closed).
func (a *attachStream) Write(p []byte) (int, error) {
	a.mu.Lock()
	dl := a.deadline
	a.writing = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.writing = false
		a.mu.Unlock()
	}()
	if dl.IsZero() {
		return a.inW.Write(p)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := a.inW.Write(p)
		done <- result{n, err}
	}()
	t := time.NewTimer(time.Until(dl))
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
		a.inW.CloseWithError(os.ErrDeadlineExceeded)
		r := <-done
		return r.n, os.ErrDeadlineExceeded
	}
}

// SetWriteDeadline bounds later writes; a deadline already past breaks a
// write in flight (the caller's context ended).
func (a *attachStream) SetWriteDeadline(t time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deadline = t
	if a.writing && !t.IsZero() && time.Now().After(t) {
		a.inW.CloseWithError(os.ErrDeadlineExceeded)
	}
	return nil
}

func (a *attachStream) CloseRead() error { return a.outR.CloseWithError(io.ErrClosedPipe) }

// Close ends the executor's stdin (it exits on EOF) and the reads.
func (a *attachStream) Close() error {
	_ = a.inW.Close()
	return a.CloseRead()
}

// end is called when the attach stream ended, with why.
func (a *attachStream) end(err error) {
	if err == nil {
		err = io.EOF
	}
	a.outW.CloseWithError(err)
	a.inR.CloseWithError(err)
}

// attach opens the attach stream to the pod's container (WebSocket, or
// SPDY where the API server does not speak it) and serves it until ctx
// ends or the stream does; stderr receives the executor's stderr.
func (r *Runtime) attach(ctx context.Context, name string, a *attachStream, stderr io.Writer) (func() error, error) {
	req := r.cs.CoreV1().RESTClient().Post().Namespace(r.opts.Namespace).Resource("pods").Name(name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: containerName, Stdin: true, Stdout: true, Stderr: true, TTY: false}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(r.rest, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.rest, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: a.inR, Stdout: a.outW, Stderr: stderr})
	}, nil
}
