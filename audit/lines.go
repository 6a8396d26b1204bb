package audit

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
)

// head is what Verify (and the writer, for the last line) needs from a line:
// a few top-level members, extracted by a small scanner that never decodes
// the large fields.
type head struct {
	seq     int64
	hasSeq  bool
	prev    []byte
	session []byte
	event   []byte
	mac     []byte
	hasMAC  bool
}

// parseHead scans one JSON object and fills h from its top-level members. It
// reports false if b is not a single JSON object (nested values are checked
// for balanced structure and well-formed strings, not decoded). The slices in
// h alias b unless a string had escapes.
func parseHead(b []byte, h *head) bool {
	*h = head{}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks, ke, esc, end := scanString(b, i)
		if end < 0 {
			return false
		}
		key := b[ks:ke]
		if esc {
			key = unescape(b[i:end])
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		var val []byte
		isString := b[i] == '"'
		if isString {
			vs, ve, vesc, vend := scanString(b, i)
			if vend < 0 {
				return false
			}
			val = b[vs:ve]
			if vesc && wanted(key) {
				val = unescape(b[i:vend])
			}
			end = vend
		} else {
			end = skipValue(b, i, 0)
			if end < 0 {
				return false
			}
			val = b[i:end]
		}
		switch string(key) {
		case "seq":
			n, ok := parseInt(val)
			if isString || !ok {
				return false
			}
			h.seq, h.hasSeq = n, true
		case "prev":
			h.prev = stringOnly(val, isString)
		case "session":
			h.session = stringOnly(val, isString)
		case "event":
			h.event = stringOnly(val, isString)
		case "mac":
			h.mac, h.hasMAC = stringOnly(val, isString), true
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return skipWS(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// wanted reports whether parseHead keeps the value of key.
func wanted(key []byte) bool {
	switch string(key) {
	case "seq", "prev", "session", "event", "mac":
		return true
	}
	return false
}

func stringOnly(v []byte, isString bool) []byte {
	if !isString {
		return nil
	}
	return v
}

func unescape(quoted []byte) []byte {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the JSON string starting at b[i] == '"'. It returns the
// content bounds, whether it has escapes and the index after the closing
// quote, or end < 0 if the string is not well formed.
func scanString(b []byte, i int) (start, stop int, esc bool, end int) {
	j := i + 1
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return i + 1, j, esc, j + 1
		case c == '\\':
			esc = true
			if j+1 >= len(b) {
				return 0, 0, false, -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex4(b[j+2:j+6]) {
					return 0, 0, false, -1
				}
				j += 6
			default:
				return 0, 0, false, -1
			}
		case c < 0x20:
			return 0, 0, false, -1
		default:
			j++
		}
	}
	return 0, 0, false, -1
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skipValue returns the index after the JSON value at b[i], or -1.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) || depth > 1000 {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		_, _, _, end := scanString(b, i)
		return end
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				_, _, _, end := scanString(b, i)
				if end < 0 {
					return -1
				}
				i = skipWS(b, end)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipWS(b, i+1)
			}
			end := skipValue(b, i, depth+1)
			if end < 0 {
				return -1
			}
			i = skipWS(b, end)
			if i >= len(b) {
				return -1
			}
			if b[i] == closer {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = skipWS(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		j := i
		for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || '0' <= b[j] && b[j] <= '9') {
			j++
		}
		return j
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// parseInt parses a non-negative decimal integer without allocating.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// rawLine is one line as read from a log.
type rawLine struct {
	n    int      // 1-based line number
	b    []byte   // bytes without the newline; nil if long
	sum  [32]byte // sha256 of the line's bytes
	nl   bool     // the line ended with a newline
	long bool     // longer than maxLineBytes: only the hash is known
}

// lineReader splits a log into lines, hashing each one. Lines longer than
// maxLineBytes are hashed but not kept.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	n   int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line; io.EOF after the last one. The line's bytes are
// valid until the next call.
func (lr *lineReader) next() (rawLine, error) {
	frag, err := lr.br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(frag) > 0) {
		lr.n++
		l := rawLine{n: lr.n, nl: err == nil}
		if l.nl {
			frag = frag[:len(frag)-1]
		}
		l.b, l.sum = frag, sha256.Sum256(frag)
		return l, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return rawLine{}, err
	}
	// A line longer than the buffer.
	lr.n++
	l := rawLine{n: lr.n}
	h := sha256.New()
	lr.buf = append(lr.buf[:0], frag...)
	h.Write(frag)
	for {
		frag, err = lr.br.ReadSlice('\n')
		if err == nil {
			l.nl = true
			frag = frag[:len(frag)-1]
		} else if !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
			return rawLine{}, err
		}
		h.Write(frag)
		if !l.long && len(lr.buf)+len(frag) <= maxLineBytes {
			lr.buf = append(lr.buf, frag...)
		} else {
			l.long = true
			lr.buf = lr.buf[:0]
		}
		if err == nil || errors.Is(err, io.EOF) {
			break
		}
	}
	h.Sum(l.sum[:0])
	if !l.long {
		l.b = lr.buf
	}
	return l, nil
}
