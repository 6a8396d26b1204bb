package wire

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrTooManyStreams is Mux.Open's refusal beyond MaxStreams.
var ErrTooManyStreams = fmt.Errorf("more than %d proxied connections at once; close some and retry", MaxStreams)

// Mux carries proxied connections as streams over the channel, one Mux
// per session on each side. The executor's Mux (NewMux) opens streams; the
// host's (inside Client) accepts them. Frames from the peer go to Deliver,
// which never blocks: a stream whose reader is stuck only stops its
// sender through the credit it no longer grants.
//
// Both sides count the streams open; the host never counts more than the
// executor (it counts a stream out before it sends the frame that ends it
// and the executor only after), so an executor that keeps to MaxStreams
// never trips the host's bound.
type Mux struct {
	host   bool                     // the host side: accepts opens, counts streams out early
	send   func(*StreamFrame) error // writes one frame; must not keep f once it returns
	accept func(net.Conn)           // host: takes each new stream; must not block

	openMu sync.Mutex // executor: one open at a time, so the ids reach the host in order

	mu      sync.Mutex
	streams map[uint64]*streamConn
	last    uint64 // the last id opened
	err     error  // set by Close
}

// NewMux is the executor's side: send writes one authenticated frame to
// the host (it is called from many goroutines and must serialise them).
func NewMux(send func(*StreamFrame) error) *Mux {
	return &Mux{send: send, streams: map[uint64]*streamConn{}}
}

// newHostMux is the host's side: each stream the executor opens is
// handed to accept.
func newHostMux(send func(*StreamFrame) error, accept func(net.Conn)) *Mux {
	return &Mux{host: true, send: send, accept: accept, streams: map[uint64]*streamConn{}}
}

// Open opens a stream to the host-side proxy (executor side). Bytes may
// be written at once: the host buffers them while it dials the proxy, and
// refuses the connection (an HTTP 502, then the end of the stream) when
// it cannot.
func (m *Mux) Open() (net.Conn, error) {
	if m.host {
		return nil, errors.New("the host side does not open streams")
	}
	m.openMu.Lock()
	defer m.openMu.Unlock()
	m.mu.Lock()
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		return nil, err
	}
	if len(m.streams) >= MaxStreams {
		m.mu.Unlock()
		return nil, ErrTooManyStreams
	}
	m.last++
	s := newStreamConn(m, m.last)
	m.streams[s.id] = s
	m.mu.Unlock()
	if err := m.send(&StreamFrame{ID: s.id, Kind: StreamOpen}); err != nil {
		m.remove(s)
		s.end(err)
		return nil, fmt.Errorf("opening a stream over the channel: %w", err)
	}
	return s, nil
}

// Deliver takes one frame from the peer. It never blocks. An error means
// the peer broke the protocol: the caller must end the channel.
func (m *Mux) Deliver(f *StreamFrame) error {
	if f == nil {
		return errors.New("an empty stream frame")
	}
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return nil // the session is ending
	}
	if f.Kind == StreamOpen {
		s, err := m.opened(f)
		m.mu.Unlock()
		if err != nil {
			return err
		}
		m.accept(s)
		return nil
	}
	s := m.streams[f.ID]
	if s == nil {
		m.mu.Unlock()
		if f.ID == 0 || f.ID > m.last {
			return fmt.Errorf("a %s frame for stream %d, which was never opened", f.Kind, f.ID)
		}
		return nil // ended here already; the peer sent it before it knew
	}
	m.mu.Unlock()
	done, err := s.deliver(f)
	if done {
		m.remove(s)
	}
	return err
}

// opened registers the stream an open frame starts; m.mu is held.
func (m *Mux) opened(f *StreamFrame) (*streamConn, error) {
	switch {
	case !m.host:
		return nil, errors.New("the host opened a stream")
	case f.ID != m.last+1:
		return nil, fmt.Errorf("stream %d opened out of sequence (want %d)", f.ID, m.last+1)
	case len(f.Data) > 0 || f.Credit != 0 || f.Error != "":
		return nil, fmt.Errorf("stream %d: an open frame with a payload", f.ID)
	case len(m.streams) >= MaxStreams:
		return nil, fmt.Errorf("stream %d opened with %d streams open, over the bound of %d", f.ID, len(m.streams), MaxStreams)
	}
	m.last = f.ID
	s := newStreamConn(m, f.ID)
	m.streams[f.ID] = s
	return s, nil
}

// releasing and released bracket the send of a frame that ends a stream:
// the host counts it out before, the executor after.
func (m *Mux) releasing(s *streamConn) {
	if m.host {
		m.remove(s)
	}
}

func (m *Mux) released(s *streamConn) {
	if !m.host {
		m.remove(s)
	}
}

func (m *Mux) remove(s *streamConn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.streams[s.id] == s {
		delete(m.streams, s.id)
	}
}

// count reports the streams open now.
func (m *Mux) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.streams)
}

// Close ends every stream with err (reads and writes fail, no frame is
// sent any more) and refuses new ones. Safe to call more than once.
func (m *Mux) Close(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	all := make([]*streamConn, 0, len(m.streams))
	for _, s := range m.streams {
		all = append(all, s)
	}
	clear(m.streams)
	m.mu.Unlock()
	for _, s := range all {
		s.end(err)
	}
}
