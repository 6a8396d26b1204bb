package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Stream frames carry the connections of `network: proxy` over the channel
// when the hello sets ProxyChannel. The executor opens a stream for each
// connection accepted on sandbox.ProxyListenAddr; both sides then send
// data, a half-close (eof) and credit; either side may abort (close).
const (
	StreamOpen   = "open"   // executor to host only: a new connection; no address, the host dials only its proxy
	StreamData   = "data"   // 1..StreamChunk bytes, within the credit the receiver granted
	StreamEOF    = "eof"    // the sender sends no more data (a half-close)
	StreamClose  = "close"  // the sender drops the stream; Error may say why
	StreamCredit = "credit" // the receiver consumed Credit bytes: the sender may send that many more
)

// Bounds of the proxied connections, the same on both sides.
const (
	// StreamChunk is the most data one frame carries.
	StreamChunk = 32 << 10
	// StreamWindow is how much one side may send on one stream before the
	// receiver grants more: what each side buffers per stream at most. A
	// stuck reader stops its sender; it never holds up the channel.
	StreamWindow = 256 << 10
	// MaxStreams bounds the streams open at once. The executor refuses
	// connections beyond it; an executor that opens more is broken or
	// hostile, and the host ends the session.
	MaxStreams = 64
)

// StreamFrame is one frame of a proxied connection: Request.Stream from the
// host, Response.Stream from the executor.
type StreamFrame struct {
	ID     uint64 `json:"id"` // the stream: 1, 2, 3, … in the order the executor opens them
	Kind   string `json:"kind"`
	Data   []byte `json:"data,omitempty"`
	Credit int    `json:"credit,omitempty"`
	Error  string `json:"error,omitempty"`
}

// errPeerClosed is what Read and Write return once the peer dropped the
// stream.
var errPeerClosed = errors.New("the proxied connection was closed by the other side of the channel")

// streamConn is one proxied connection: a net.Conn (with CloseWrite) whose
// bytes travel as stream frames. Received data waits in buf, which the
// credit given to the peer bounds by StreamWindow; writes wait for credit.
type streamConn struct {
	m  *Mux
	id uint64

	mu       sync.Mutex
	wake     chan struct{} // closed and replaced on every change of state
	buf      bytes.Buffer  // received, not yet read
	window   int           // bytes the peer may still send
	unacked  int           // bytes read but not yet granted back
	credit   int           // bytes this side may still send
	gotEOF   bool
	eofSent  bool // our eof frame is on the channel
	eofBusy  bool // our eof frame is being sent (or was)
	peerDone bool // the peer knows the stream is over: no close frame is due
	closed   bool // Close was called
	err      error
	over     chan struct{} // closed once err is set
	rdl      time.Time
	wdl      time.Time
}

var _ net.Conn = (*streamConn)(nil)

func newStreamConn(m *Mux, id uint64) *streamConn {
	return &streamConn{m: m, id: id, wake: make(chan struct{}), over: make(chan struct{}), window: StreamWindow, credit: StreamWindow}
}

// changed wakes every waiter; s.mu is held.
func (s *streamConn) changed() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// fail sets the stream's error (the first one wins); s.mu is held.
func (s *streamConn) fail(err error) {
	if s.err == nil {
		s.err = err
		close(s.over)
	}
}

// wait sleeps until the state changes or dl passes; s.mu is held on entry
// and on return.
func (s *streamConn) wait(dl time.Time) error {
	ch := s.wake
	var timeout <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

// Read returns received data; after the peer's eof io.EOF, after it
// dropped the stream (or the channel ended) an error. Data already
// received is returned first either way. Consumed bytes are granted back
// to the peer in batches.
func (s *streamConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	for s.buf.Len() == 0 || s.closed {
		switch {
		case s.closed:
			s.mu.Unlock()
			return 0, net.ErrClosed
		case s.gotEOF:
			s.mu.Unlock()
			return 0, io.EOF
		case s.err != nil:
			err := s.err
			s.mu.Unlock()
			return 0, err
		}
		if err := s.wait(s.rdl); err != nil {
			s.mu.Unlock()
			return 0, err
		}
	}
	n, _ := s.buf.Read(p)
	s.unacked += n
	grant := 0
	if s.unacked >= StreamWindow/4 && !s.gotEOF && s.err == nil && !s.closed {
		grant, s.unacked = s.unacked, 0
		s.window += grant
	}
	s.mu.Unlock()
	if grant > 0 {
		// A failed send means the channel is gone; the mux ends the
		// stream then.
		_ = s.m.send(&StreamFrame{ID: s.id, Kind: StreamCredit, Credit: grant})
	}
	return n, nil
}

// Write sends p in chunks of at most StreamChunk, each within the credit
// the peer granted; it waits for credit (until the write deadline).
func (s *streamConn) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		s.mu.Lock()
		for s.credit == 0 && s.writable() == nil {
			if err := s.wait(s.wdl); err != nil {
				s.mu.Unlock()
				return total, err
			}
		}
		if err := s.writable(); err != nil {
			s.mu.Unlock()
			return total, err
		}
		n := min(len(p), StreamChunk, s.credit)
		s.credit -= n
		s.mu.Unlock()
		if err := s.m.send(&StreamFrame{ID: s.id, Kind: StreamData, Data: p[:n]}); err != nil {
			return total, err
		}
		p, total = p[n:], total+n
	}
	return total, nil
}

// writable says why nothing more may be sent; s.mu is held.
func (s *streamConn) writable() error {
	switch {
	case s.closed:
		return net.ErrClosed
	case s.eofBusy:
		return fmt.Errorf("write after CloseWrite: %w", net.ErrClosed)
	}
	return s.err
}

// CloseWrite sends the eof: the peer reads io.EOF after the data.
func (s *streamConn) CloseWrite() error {
	s.mu.Lock()
	if err := s.writable(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.eofBusy = true
	if s.gotEOF {
		s.peerDone = true // both directions end with this frame
		s.mu.Unlock()
		s.m.releasing(s)
	} else {
		s.mu.Unlock()
	}
	err := s.m.send(&StreamFrame{ID: s.id, Kind: StreamEOF})
	s.mu.Lock()
	s.eofSent = true
	done := s.gotEOF
	if done {
		s.peerDone = true
	}
	s.mu.Unlock()
	if done {
		s.m.released(s)
	}
	return err
}

// Close drops the stream: a close frame tells the peer, unless the stream
// already ended in both directions or the peer dropped it first.
func (s *streamConn) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.fail(net.ErrClosed)
	tell := !s.peerDone
	s.peerDone = true
	s.changed()
	s.mu.Unlock()
	s.m.releasing(s)
	if tell {
		_ = s.m.send(&StreamFrame{ID: s.id, Kind: StreamClose})
	}
	s.m.released(s)
	return nil
}

// deliver takes one frame from the peer. It never blocks. A frame no
// honest peer sends is an error (the channel is broken). done says the
// stream no longer counts against MaxStreams. A peer that overran its
// window loses this stream only (on the host: the executor is the one
// that could; on the executor an overrun is a broken host).
func (s *streamConn) deliver(f *StreamFrame) (done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, nil // Close is releasing it; frames the peer sent before it knew
	}
	switch f.Kind {
	case StreamData:
		if len(f.Data) == 0 || len(f.Data) > StreamChunk || s.gotEOF {
			return false, fmt.Errorf("stream %d: a data frame of %d bytes (after its eof: %v)", s.id, len(f.Data), s.gotEOF)
		}
		if len(f.Data) > s.window {
			if !s.m.host {
				return false, fmt.Errorf("stream %d: %d bytes sent with %d bytes of credit", s.id, len(f.Data), s.window)
			}
			s.fail(fmt.Errorf("the sandbox side sent more than the %d-byte window of this connection; connection closed", StreamWindow))
			done = true
			break
		}
		s.window -= len(f.Data)
		s.buf.Write(f.Data)
	case StreamEOF:
		if s.gotEOF {
			return false, fmt.Errorf("stream %d: a second eof", s.id)
		}
		s.gotEOF = true
		// The host counts the stream out as soon as its own eof is on its
		// way, the executor once it has been sent (see Mux).
		if s.eofSent || (s.m.host && s.eofBusy) {
			s.peerDone, done = true, true
		}
	case StreamClose:
		s.peerDone, done = true, true
		if f.Error != "" {
			s.fail(fmt.Errorf("%w: %s", errPeerClosed, f.Error))
		}
		s.fail(errPeerClosed)
	case StreamCredit:
		if f.Credit <= 0 || s.credit+f.Credit > StreamWindow {
			return false, fmt.Errorf("stream %d: a credit of %d bytes (%d unused) exceeds the %d-byte window", s.id, f.Credit, s.credit, StreamWindow)
		}
		s.credit += f.Credit
	default:
		return false, fmt.Errorf("stream %d: unknown frame kind %q", s.id, f.Kind)
	}
	s.changed()
	return done, nil
}

// end fails every waiting and later call with err (the channel ended).
func (s *streamConn) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail(err)
	s.peerDone = true
	s.changed()
}

func (s *streamConn) LocalAddr() net.Addr  { return streamAddr(s.id) }
func (s *streamConn) RemoteAddr() net.Addr { return streamAddr(s.id) }

func (s *streamConn) SetDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rdl, s.wdl = t, t
	s.changed()
	return nil
}

func (s *streamConn) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rdl = t
	s.changed()
	return nil
}

func (s *streamConn) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wdl = t
	s.changed()
	return nil
}

// streamAddr names a stream as a net.Addr.
type streamAddr uint64

func (a streamAddr) Network() string { return "agentbox-channel" }
func (a streamAddr) String() string  { return fmt.Sprintf("stream-%d", uint64(a)) }
