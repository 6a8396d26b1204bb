package netproxy

import "io"

// readBuf is how much a scrubReader reads at once into its own buffer
// (besides what it holds back), for a caller whose buffer is small.
const readBuf = 32 << 10

// scrubReader masks every value in what r yields. It holds back the
// scrubber's hold() last bytes until more arrive, so a value split across
// reads is still found, and an escape cut by a read is read whole; what it
// holds back is scanned again with what follows, nothing before it. A
// caller's buffer larger than twice that is read into directly (only what
// is held back is copied); a smaller one is served from the reader's own
// buffer, the scrubber's, taken back at the end.
type scrubReader struct {
	r   io.Reader
	s   *scrubber
	buf *[]byte
	off int // buf[off:ready] are scrubbed and may be handed out
	// buf[ready:end] are held back
	ready, end int
	err        error
}

func newScrubReader(r io.Reader, s *scrubber) io.Reader {
	if s.empty() {
		return r
	}
	return &scrubReader{r: r, s: s}
}

func (s *scrubReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.off < s.ready {
		return s.handOut(p), nil
	}
	if s.err != nil { // all was handed out: scan held nothing back
		if s.buf != nil {
			s.s.bufs.Put(s.buf)
			s.buf = nil
		}
		return 0, s.err
	}
	if s.buf == nil {
		s.buf = s.s.bufs.Get().(*[]byte)
	}
	if hold := s.s.hold(); len(p) > 2*hold {
		return s.readInto(p, hold)
	}
	for s.off == s.ready {
		buf := *s.buf
		if s.off > 0 {
			s.end = copy(buf, buf[s.off:s.end])
			s.off, s.ready = 0, 0
		}
		n, err := s.r.Read(buf[s.end:])
		s.end += n
		if s.scan(buf[:s.end], n, err) {
			break
		}
	}
	if s.off == s.ready {
		return s.Read(p) // the stream ended with nothing left: its error
	}
	return s.handOut(p), nil
}

// readInto reads into p after what is held back, masks, and keeps the
// last hold bytes back again.
func (s *scrubReader) readInto(p []byte, hold int) (int, error) {
	buf := *s.buf
	for {
		h := copy(p, buf[s.off:s.end])
		n, err := s.r.Read(p[h:])
		total := h + n
		s.off, s.ready, s.end = 0, 0, 0
		if s.scan(p[:total], n, err) {
			s.end = copy(buf, p[s.ready:total])
			ready := s.ready
			s.ready = 0
			if ready == 0 {
				return s.Read(p) // the stream ended with nothing left: its error
			}
			return ready, nil
		}
		s.end = copy(buf, p[:total])
	}
}

// scan masks b, the bytes held back and the n just read with err, and
// sets ready: all of b at the end of the stream, else all but what is held
// back. It reports whether anything is ready (or the stream has ended).
func (s *scrubReader) scan(b []byte, n int, err error) bool {
	s.err = err
	switch hold := s.s.hold(); {
	case err != nil:
		s.s.mask(b, len(b))
		s.ready = len(b)
		return true
	case n > 0 && len(b) > hold:
		s.ready = len(b) - hold
		s.s.mask(b, s.ready)
		return true
	}
	return false
}

func (s *scrubReader) handOut(p []byte) int {
	n := copy(p, (*s.buf)[s.off:s.ready])
	s.off += n
	return n
}
