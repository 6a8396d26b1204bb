package netproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strings"
)

// scrubber finds the secrets' values in what an upstream sends: each
// value spelled with any mix of literal bytes (in either ASCII case),
// percent escapes (%72), JSON and JavaScript escapes (\u0072, \x72, \/),
// and HTML character references (&#114; &#x72;); and its hex and base64
// (standard and URL alphabets, at the three alignments it can have inside
// a longer encoded string, so "Basic base64(user:value)" is caught too).
type scrubber struct {
	vals [][]byte // the values, matched unit by unit
	lits [][]byte // encoded forms, matched exactly
	keep int      // the longest match, less one: what a reader holds back
}

// maxUnit is the longest spelling of one byte the scrubber decodes
// (&#x0000072; is refused: at most 7 digits in a character reference).
const maxUnit = 11

func newScrubber(values []string) *scrubber {
	s := &scrubber{}
	for _, v := range values {
		if v == "" {
			continue
		}
		s.vals = append(s.vals, []byte(v))
		s.keep = max(s.keep, len(v)*maxUnit-1)
		for _, f := range encodedForms(v) {
			s.lits = append(s.lits, f)
			s.keep = max(s.keep, len(f)-1)
		}
	}
	return s
}

func (s *scrubber) empty() bool { return s == nil || len(s.vals) == 0 }

// encodedForms are the value's hex (both cases) and base64 forms.
func encodedForms(v string) [][]byte {
	var out [][]byte
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

// mask overwrites every occurrence of a value in b with '*' (the length
// is kept, so is a response's framing) and reports whether it found one.
func (s *scrubber) mask(b []byte) bool {
	found := false
	for _, v := range s.lits {
		for off := 0; ; {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			found = true
			star(b[off+i : off+i+len(v)])
			off += i + len(v)
		}
	}
	for _, v := range s.vals {
		c0 := v[0]
		lo, up := lower(c0), upper(c0)
		for i := 0; i < len(b); i++ {
			c := b[i]
			if c != lo && c != up && c != '%' && c != '\\' && c != '&' {
				continue
			}
			if n := matchAt(b[i:], v); n > 0 {
				found = true
				star(b[i : i+n])
				i += n - 1
			}
		}
	}
	return found
}

func star(b []byte) {
	for i := range b {
		b[i] = '*'
	}
}

// matchAt is the length of the spelling of v that starts b, or 0.
func matchAt(b, v []byte) int {
	p := 0
	for _, want := range v {
		c, n := unit(b[p:])
		if n == 0 || lower(c) != lower(want) {
			return 0
		}
		p += n
	}
	return p
}

// unit decodes the byte spelled at the start of b and its length (0: b is
// empty).
func unit(b []byte) (byte, int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case '%':
		if len(b) >= 3 && isHex(b[1]) && isHex(b[2]) {
			return unhex(b[1])<<4 | unhex(b[2]), 3
		}
	case '\\':
		if len(b) >= 6 && (b[1] == 'u' || b[1] == 'U') && b[2] == '0' && b[3] == '0' && isHex(b[4]) && isHex(b[5]) {
			return unhex(b[4])<<4 | unhex(b[5]), 6
		}
		if len(b) >= 4 && (b[1] == 'x' || b[1] == 'X') && isHex(b[2]) && isHex(b[3]) {
			return unhex(b[2])<<4 | unhex(b[3]), 4
		}
		if len(b) >= 2 && b[1] < 0x80 && !isAlnum(b[1]) {
			return b[1], 2 // \/ \" \\ \- ...
		}
	case '&':
		if len(b) >= 4 && b[1] == '#' {
			return charRef(b)
		}
	}
	return b[0], 1
}

// charRef decodes &#DDD; or &#xHH; (b starts with "&#"), up to 7 digits.
func charRef(b []byte) (byte, int) {
	i, base := 2, 10
	if b[2] == 'x' || b[2] == 'X' {
		i, base = 3, 16
	}
	v, start := 0, i
	for ; i < len(b) && i-start < 8; i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9', base == 16 && isHex(c):
			v = v*base + int(unhex(c))
			continue
		case c == ';' && i > start && v < 0x100:
			return byte(v), i + 1
		}
		break
	}
	return '&', 1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func isAlnum(c byte) bool { return c >= '0' && c <= '9' || lower(c) >= 'a' && lower(c) <= 'z' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// String masks the values in str.
func (s *scrubber) String(str string) string {
	if s.empty() {
		return str
	}
	b := []byte(str)
	if !s.mask(b) {
		return str
	}
	return string(b)
}

// scrubReader masks every value in what r yields. It holds back the last
// keep bytes until more arrive, so a value split across reads is still
// found.
type scrubReader struct {
	r     io.Reader
	s     *scrubber
	buf   []byte // bytes read, not yet handed out
	ready int    // buf[:ready] are scrubbed and may be handed out
	eof   bool
	err   error
}

func newScrubReader(r io.Reader, s *scrubber) io.Reader {
	if s.empty() {
		return r
	}
	return &scrubReader{r: r, s: s, buf: make([]byte, 0, 64<<10+s.keep)}
}

func (s *scrubReader) Read(p []byte) (int, error) {
	keep := s.s.keep
	for s.ready == 0 {
		if s.eof {
			if len(s.buf) == 0 {
				return 0, s.err
			}
			s.ready = len(s.buf)
			break
		}
		if cap(s.buf)-len(s.buf) < 32<<10 {
			nb := make([]byte, len(s.buf), 2*cap(s.buf)+keep)
			copy(nb, s.buf)
			s.buf = nb
		}
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.eof, s.err = true, err
		}
		s.s.mask(s.buf)
		if !s.eof && len(s.buf) > keep {
			s.ready = len(s.buf) - keep
		}
	}
	n := copy(p, s.buf[:s.ready])
	rest := copy(s.buf, s.buf[n:])
	s.buf = s.buf[:rest]
	s.ready -= n
	return n, nil
}
