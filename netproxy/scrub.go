package netproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"sync"
)

// scrubber finds the secrets' values in what an upstream sends: each
// value spelled with any mix of literal bytes (in either ASCII case),
// percent escapes (%72), JSON and JavaScript escapes (\u0072, \x72, \/),
// and HTML character references (&#114; &#x72;); and its hex and base64
// (standard and URL alphabets, at the three alignments it can have inside
// a longer encoded string, so "Basic base64(user:value)" is caught too).
//
// Everything it needs is computed once, when the session's secrets are
// known; a scan then skips what cannot be part of a match without looking
// at every byte: every byte of every spelling is in alpha, and every
// spelling is at least minLen long, so one byte in minLen outside alpha
// rules out every match across it (binary and most text is skipped that
// way), and within a run of alpha bytes only the positions whose first two
// bytes can open a spelling (pairs) are tried.
type scrubber struct {
	vals   [][]byte // the values, matched unit by unit
	lits   [][]byte // encoded forms, matched exactly
	keep   int      // the longest match, less one
	minLen int      // the shortest match

	alpha  [256]bool            // the bytes any spelling is made of
	pairs  [1 << 16 / 64]uint64 // the first two bytes of any spelling, as a bit set
	byHead [256][][]byte        // lits by their first byte

	bufs sync.Pool // *[]byte of readBuf+keep bytes, for scrubReaders
}

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
	s.minLen = s.keep + 1
	for _, v := range s.vals {
		s.minLen = min(s.minLen, len(v))
		for _, c := range v {
			s.alpha[lower(c)], s.alpha[upper(c)] = true, true
		}
		for _, c := range []byte(escapeBytes) {
			s.alpha[c] = true
		}
		// A spelling opens with the first unit's first byte and either
		// the next unit's first byte or the rest of the first unit.
		next := allBytes()
		if len(v) > 1 {
			next = unitStarts(v[1])
		}
		for _, c := range []byte{lower(v[0]), upper(v[0])} {
			s.addPairs(c, next)
		}
		pct := []byte{}
		for _, c := range []byte{lower(v[0]), upper(v[0])} {
			h := hex.EncodeToString([]byte{c})[0]
			pct = append(pct, h, upper(h))
		}
		s.addPairs('%', pct)
		s.addPairs('\\', []byte{'u', 'U', 'x', 'X', v[0]})
		s.addPairs('&', []byte{'#'})
		if c := v[0]; c == '%' || c == '\\' || c == '&' {
			s.addPairs(c, allBytes()) // an escape that does not parse is the literal byte
		}
	}
	for _, f := range s.lits {
		s.minLen = min(s.minLen, len(f))
		for _, c := range f {
			s.alpha[c] = true
		}
		s.addPairs(f[0], f[1:2])
		s.byHead[f[0]] = append(s.byHead[f[0]], f)
	}
	size := readBuf + s.hold()
	s.bufs.New = func() any {
		b := make([]byte, size)
		return &b
	}
	return s
}

func (s *scrubber) addPairs(first byte, seconds []byte) {
	for _, c := range seconds {
		k := uint(first)<<8 | uint(c)
		s.pairs[k>>6] |= 1 << (k & 63)
	}
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// hold is what a reader holds back until more arrives: a match that
// starts before it is whole, and so is the last escape in it.
func (s *scrubber) hold() int { return s.keep + maxUnit - 1 }

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

// mask overwrites every spelling of a value that starts in b[:limit] with
// '*' (the length is kept, so is a response's framing) and reports whether
// it found one. Every match is in a run of alpha bytes at least minLen
// long, and covers one of the positions minLen apart after the end of the
// last run looked at: only those positions are read until one is in alpha.
func (s *scrubber) mask(b []byte, limit int) bool {
	found := false
	step := s.minLen
	done := 0 // runs before done are scanned
	for j := step - 1; j < len(b) && done < limit; {
		if !s.alpha[b[j]] {
			j += step
			continue
		}
		start, end := j, j+1
		for start > done && s.alpha[b[start-1]] {
			start--
		}
		for end < len(b) && s.alpha[b[end]] {
			end++
		}
		if end-start >= step && start < limit && s.maskRun(b, start, end, limit) {
			found = true
		}
		done = end
		j = end + step // b[end] is not in alpha: the next match starts after it
	}
	return found
}

// maskRun masks the spellings that start in b[start:min(end, limit)],
// a run of alpha bytes. A spelling is read on past end, as the upstream's
// reader would (an escape cut at end would read as a literal), but never
// ends there.
func (s *scrubber) maskRun(b []byte, start, end, limit int) bool {
	found := false
	for i := start; i+s.minLen <= end && i < limit; i++ {
		if i+1 < len(b) {
			k := uint(b[i])<<8 | uint(b[i+1])
			if s.pairs[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
		}
		if n := s.matchAt(b[i:]); n > 0 {
			found = true
			star(b[i : i+n])
			i += n - 1
		}
	}
	return found
}

// matchAt is the length of the spelling of a value or encoded form that
// starts b, or 0.
func (s *scrubber) matchAt(b []byte) int {
	for _, f := range s.byHead[b[0]] {
		if bytes.HasPrefix(b, f) {
			return len(f)
		}
	}
	for _, v := range s.vals {
		if n := matchAt(b, v); n > 0 {
			return n
		}
	}
	return 0
}

func star(b []byte) {
	for i := range b {
		b[i] = '*'
	}
}

// String masks the values in str.
func (s *scrubber) String(str string) string {
	if s.empty() {
		return str
	}
	b := []byte(str)
	if !s.mask(b, len(b)) {
		return str
	}
	return string(b)
}
