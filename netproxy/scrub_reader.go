package netproxy

import "io"

// readBuf is how much a scrubReader reads at once (besides what it holds
// back).
const readBuf = 128 << 10

// scrubReader masks every value in what r yields. It holds back the
// scrubber's hold() last bytes until more arrive, so a value split across
// reads is still found, and an escape cut by a read is read whole; what it
// holds back is scanned again with what follows, nothing before it. Its buffer is the scrubber's, taken back at the end.
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
	for s.off == s.ready {
		if s.err != nil {
			if s.ready < s.end {
				s.ready = s.end // masked with the last read
				break
			}
			if s.buf != nil {
				s.s.bufs.Put(s.buf)
				s.buf = nil
			}
			return 0, s.err
		}
		if s.buf == nil {
			s.buf = s.s.bufs.Get().(*[]byte)
		}
		buf := *s.buf
		if s.off > 0 {
			s.end = copy(buf, buf[s.off:s.end])
			s.off, s.ready = 0, 0
		}
		n, err := s.r.Read(buf[s.end:])
		s.end += n
		s.err = err
		switch hold := s.s.hold(); {
		case err != nil:
			s.s.mask(buf[:s.end], s.end)
			s.ready = s.end
		case n > 0 && s.end > hold:
			s.ready = s.end - hold
			s.s.mask(buf[:s.end], s.ready)
		}
	}
	n := copy(p, (*s.buf)[s.off:s.ready])
	s.off += n
	return n, nil
}
