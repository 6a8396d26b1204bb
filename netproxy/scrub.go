package netproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strings"
)

// scrubReader masks every occurrence of the values in what r yields with
// as many '*' (the length is kept, so is the response's framing). It holds
// back the last len(longest)-1 bytes until more arrive, so a value split
// across reads is still found.
type scrubReader struct {
	r     io.Reader
	vals  [][]byte
	keep  int
	buf   []byte // bytes read, not yet handed out
	ready int    // buf[:ready] are scrubbed and may be handed out
	eof   bool
	err   error
}

func newScrubReader(r io.Reader, vals [][]byte) io.Reader {
	if len(vals) == 0 {
		return r
	}
	keep := 0
	for _, v := range vals {
		keep = max(keep, len(v)-1)
	}
	return &scrubReader{r: r, vals: vals, keep: keep, buf: make([]byte, 0, 64<<10)}
}

func (s *scrubReader) Read(p []byte) (int, error) {
	for s.ready == 0 {
		if s.eof {
			if len(s.buf) == 0 {
				return 0, s.err
			}
			s.ready = len(s.buf)
			break
		}
		if cap(s.buf)-len(s.buf) < 32<<10 {
			nb := make([]byte, len(s.buf), 2*cap(s.buf)+s.keep)
			copy(nb, s.buf)
			s.buf = nb
		}
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.err = err
			} else {
				s.err = io.EOF
			}
		}
		mask(s.buf, s.vals)
		if !s.eof && len(s.buf) > s.keep {
			s.ready = len(s.buf) - s.keep
		}
	}
	n := copy(p, s.buf[:s.ready])
	rest := copy(s.buf, s.buf[n:])
	s.buf = s.buf[:rest]
	s.ready -= n
	return n, nil
}

// mask overwrites every occurrence of the values in b with '*'.
func mask(b []byte, vals [][]byte) bool {
	found := false
	for _, v := range vals {
		for off := 0; ; {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			found = true
			for j := off + i; j < off+i+len(v); j++ {
				b[j] = '*'
			}
			off += i + len(v)
		}
	}
	return found
}

// scrubString masks the values in s.
func scrubString(s string, vals [][]byte) string {
	for _, v := range vals {
		if bytes.Contains([]byte(s), v) {
			b := []byte(s)
			mask(b, vals)
			return string(b)
		}
	}
	return s
}

// scrubForms are the forms of a value scrubbed from responses: the value,
// its hex, and its base64 (standard and URL alphabets) at each of the
// three alignments it can have inside a longer encoded string (so
// "Basic base64(user:value)" echoed back is caught too).
func scrubForms(v string) [][]byte {
	out := [][]byte{[]byte(v)}
	add := func(s string) {
		if len(s) >= 8 {
			out = append(out, []byte(s))
		}
	}
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	for off := 0; off < 3 && off < len(v); off++ {
		part := v[off:]
		part = part[:len(part)/3*3]
		add(base64.RawStdEncoding.EncodeToString([]byte(part)))
		add(base64.RawURLEncoding.EncodeToString([]byte(part)))
	}
	return out
}
