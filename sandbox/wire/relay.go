package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// probeWait bounds how long a new stream may stay silent before the proxy
// is dialed anyway (the proxy then times it out itself). A stream that
// ends without a byte is no attempt and dials nothing, as with the socket.
const probeWait = 10 * time.Second

// streamWait bounds the write of one stream frame to the executor.
const streamWait = 30 * time.Second

// errSessionEnded ends the streams still open when the client closes.
var errSessionEnded = fmt.Errorf("%w: the session ended", sandbox.ErrClosed)

// relay is the host side of the proxy channel: every stream the executor
// opens is carried to a connection from dial (the host-side proxy, and
// nothing else: an open frame names no address).
type relay struct {
	mux    *Mux
	dial   func(context.Context) (net.Conn, error)
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRelay(dial func(context.Context) (net.Conn, error), send func(*StreamFrame) error) *relay {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{dial: dial, cancel: cancel}
	r.mux = newHostMux(send, func(c net.Conn) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.serve(ctx, c.(*streamConn))
		}()
	})
	return r
}

// stop ends every stream and waits for their relays. The reader must have
// returned (no more opens).
func (r *relay) stop() {
	r.mux.Close(errSessionEnded)
	r.cancel()
	r.wg.Wait()
}

// serve carries one stream to the proxy until both directions have ended.
func (r *relay) serve(ctx context.Context, s *streamConn) {
	defer s.Close()
	br := bufio.NewReaderSize(s, StreamChunk)
	_ = s.SetReadDeadline(time.Now().Add(probeWait))
	_, err := br.Peek(1)
	_ = s.SetReadDeadline(time.Time{})
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	up, err := r.dial(ctx)
	if err != nil {
		// Fail closed: the program in the sandbox sees the refusal as the
		// proxy would answer it.
		body := "agentbox: the network proxy is unreachable: " + err.Error() + "\n"
		fmt.Fprintf(s, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		_ = s.CloseWrite()
		return
	}
	defer up.Close()
	// A stream the executor drops, or the end of the session, also ends
	// a copy that waits on the proxy.
	finished := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-s.over:
			up.Close()
		case <-ctx.Done():
			up.Close()
		case <-finished:
		}
	}()
	defer func() { close(finished); <-watched }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(up, br, s)
	}()
	copyHalf(s, up, up)
	<-done
}

// copyHalf copies src (read through r) to dst; at the end of src it
// half-closes dst, on an error it closes both.
func copyHalf(dst net.Conn, r io.Reader, src net.Conn) {
	_, err := io.Copy(dst, r)
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	src.Close()
	dst.Close()
}
