package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// stopWait bounds how long the end of a session waits for the channel
// forwarder: a host that stopped reading leaves its writers stuck, and
// the executor must exit all the same.
const stopWait = 5 * time.Second

// startChannelForwarder runs the forwarder of `network: proxy` with each
// connection carried to the host as a stream over this channel (the
// hello's ProxyChannel): no socket is mounted. stop ends every
// connection and waits for them (at most stopWait).
func (s *Server) startChannelForwarder() (stop func(), err error) {
	addr := s.proxyAddr
	if addr == "" {
		addr = ProxyListenAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("network proxy forwarder: %w (is something else on %s?)", err, addr)
	}
	s.proxyAddr = ln.Addr().String()
	s.link.mux = wire.NewMux(s.link.sendStream)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ServeForward(ctx, ln, func(ctx context.Context, c net.Conn) {
			// The stream starts with who opened the connection (the host's
			// broker binds secrets to programs with it); only the executor
			// opens streams, so a program cannot forge it.
			origin := s.originLine(c)
			CarryTo(func(context.Context) (net.Conn, error) {
				up, err := s.link.mux.Open()
				if err == nil {
					if _, err = up.Write(origin); err != nil {
						up.Close()
					}
				}
				return up, err
			})(ctx, c)
		})
	}()
	return func() {
		s.link.mux.Close(errors.New("the session ended"))
		cancel()
		t := time.NewTimer(stopWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}, nil
}

// sendStream writes one stream frame to the host, numbered by Seq.
func (l *link) sendStream(f *wire.StreamFrame) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.seq++
	if err := wire.WriteResponse(l.w, l.key, &wire.Response{Seq: l.seq, Stream: f}); err != nil {
		return fmt.Errorf("executor: writing a stream frame: %w", err)
	}
	return l.w.Flush()
}

// deliver hands a stream frame from the host to its stream.
func (l *link) deliver(req *wire.Request) error {
	if l.mux == nil || req.Stream == nil {
		return errors.New("a stream frame, but the hello asked for no proxy channel")
	}
	if err := l.mux.Deliver(req.Stream); err != nil {
		return fmt.Errorf("proxy channel: %w", err)
	}
	return nil
}
