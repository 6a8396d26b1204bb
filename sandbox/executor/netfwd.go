package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/agentbox/agentbox/internal/netutil"

	"github.com/agentbox/agentbox/sandbox"
)

// ProxyListenAddr is where the in-container forwarder listens
// (sandbox.ProxyListenAddr).
const ProxyListenAddr = sandbox.ProxyListenAddr

// ProxyEnv is sandbox.ProxyEnv: the variables that point programs at the
// forwarder.
func ProxyEnv() map[string]string { return sandbox.ProxyEnv() }

// ListenForward listens on ProxyListenAddr.
func ListenForward() (net.Listener, error) {
	ln, err := net.Listen("tcp", ProxyListenAddr)
	if err != nil {
		return nil, fmt.Errorf("executor: network proxy forwarder: %w (is something else on %s?)", err, ProxyListenAddr)
	}
	return ln, nil
}

// ServeForward accepts connections on ln and hands each to carry, which
// owns it (and must close it) and carries its bytes to the host-side
// proxy by whatever transport the caller chose. A connection still open
// when ctx ends is closed. ServeForward closes ln and returns when ctx ends
// (nil) or ln fails, after every carry call has returned.
func ServeForward(ctx context.Context, ln net.Listener, carry func(context.Context, net.Conn)) error {
	return netutil.ServeEach(ctx, ln, "executor: network proxy forwarder", carry)
}

// CarryTo returns a carry function for ServeForward that opens a stream
// to the host-side proxy with dial (a unix socket mounted in, a stream of
// the multiplexed channel) and copies bytes both ways until both
// directions have ended, passing an end of stream on as a half-close.
func CarryTo(dial func(context.Context) (net.Conn, error)) func(context.Context, net.Conn) {
	return func(ctx context.Context, c net.Conn) {
		defer c.Close()
		up, err := dial(ctx)
		if err != nil {
			// The client sees the refusal as the proxy would answer it.
			body := "agentbox: the network proxy is unreachable: " + err.Error() + "\n"
			fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			return
		}
		stopUp := context.AfterFunc(ctx, func() { up.Close() })
		defer stopUp()
		defer up.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			copyHalf(up, c)
		}()
		copyHalf(c, up)
		<-done
	}
}

// copyHalf copies src to dst; at the end of src it half-closes dst, on an
// error it closes both.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	type closeWriter interface{ CloseWrite() error }
	if cw, ok := dst.(closeWriter); ok && err == nil {
		if cw.CloseWrite() == nil {
			return
		}
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		src.Close()
	}
	dst.Close()
}
