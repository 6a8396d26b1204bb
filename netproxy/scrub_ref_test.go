package netproxy

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// refMask is the scrubber's first, obviously complete search (every
// encoded form with bytes.Index, then every position for every value): the
// reference the fast scan is held to.
func refMask(s *scrubber, b []byte) bool {
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
		for i := 0; i < len(b); i++ {
			if n := matchAt(b[i:], v); n > 0 {
				found = true
				star(b[i : i+n])
				i += n - 1
			}
		}
	}
	return found
}

// spell writes v one unit at a time, each the way modes picks (cycled):
// literal, other case, percent, JSON, JavaScript, HTML references, an
// escaped punctuation mark.
func spell(v string, modes []byte) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c, m := v[i], byte(0)
		if len(modes) > 0 {
			m = modes[i%len(modes)]
		}
		switch m % 11 {
		case 1:
			if lower(c) == c {
				c = upper(c)
			} else {
				c = lower(c)
			}
			b.WriteByte(c)
		case 2:
			fmt.Fprintf(&b, "%%%02x", c)
		case 3:
			fmt.Fprintf(&b, "%%%02X", c)
		case 4:
			fmt.Fprintf(&b, "\\u%04x", c)
		case 5:
			fmt.Fprintf(&b, "\\U%04X", c)
		case 6:
			fmt.Fprintf(&b, "\\x%02x", c)
		case 7:
			fmt.Fprintf(&b, "&#%d;", c)
		case 8:
			fmt.Fprintf(&b, "&#x%X;", c)
		case 9:
			fmt.Fprintf(&b, "&#%07d;", c)
		case 10:
			if c < 0x80 && !isAlnum(c) {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// splitReader yields s in reads of the sizes in sizes (cycled, 0 as 1).
type splitReader struct {
	s     []byte
	sizes []byte
	i     int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = max(1, int(r.sizes[r.i%len(r.sizes)])*int(r.sizes[r.i%len(r.sizes)]))
		r.i++
	}
	n = copy(p[:min(len(p), n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// readAllVia reads r to the end into buffers of the sizes in sizes
// (cycled, each times 16, plus one): small ones the scrubReader serves from
// its own buffer, large ones it reads into.
func readAllVia(r io.Reader, sizes []byte) ([]byte, error) {
	var out []byte
	for i := 0; ; i++ {
		size := 4096
		if len(sizes) > 0 {
			size = 1 + 16*int(sizes[i%len(sizes)])
		}
		p := make([]byte, size)
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil || i > 1<<20 {
			return out, fmt.Errorf("read %d: %v", i, err)
		}
	}
}

// FuzzScrubNeverLeaks: a value, spelled any way the scrubber claims to
// catch, inside arbitrary bytes, read from upstream in arbitrary pieces
// and by the caller into buffers of arbitrary sizes, never comes
// out (a value that holds an escape's first byte: as the reference reads
// it); nothing but '*' is written; what the reference search finds nothing
// in passes unchanged, and the reference search finds nothing in what comes
// out.
func FuzzScrubNeverLeaks(f *testing.F) {
	f.Add(testValue, []byte("abc"), []byte("def"), []byte{0, 2, 4, 7, 9}, 0, []byte{3, 200, 1})
	f.Add(testValue, []byte("%7"), []byte("&#"), []byte{3}, 1, []byte{1})
	f.Add("pass:word%&\\x", []byte("\\"), []byte("#"), []byte{10, 2, 9}, 0, []byte{5})
	f.Add("ab", []byte("aaaa"), []byte("b"), []byte{0}, 5, []byte{0})
	f.Fuzz(func(t *testing.T, v string, before, after, modes []byte, form int, sizes []byte) {
		if v == "" || len(v) > 80 || strings.Contains(v, "*") {
			v = testValue
		}
		var sp string
		switch forms := encodedForms(v); {
		case form <= 0 || len(forms) == 0:
			sp = spell(v, modes)
		default:
			sp = string(forms[form%len(forms)])
		}
		src := append(append(append([]byte{}, before...), sp...), after...)
		sc := newScrubber([]string{v})
		got, err := readAllVia(newScrubReader(&splitReader{s: src, sizes: sizes}, sc), modes)
		if err != nil || len(got) != len(src) {
			t.Fatalf("%q: %q %v", src, got, err)
		}
		for i := range got {
			if got[i] != src[i] && got[i] != '*' {
				t.Fatalf("%q: byte %d changed to %q: %q", src, i, got[i], got)
			}
		}
		// (A value with an escape's first byte can be read on into what
		// follows: its spelling then depends on after; the reference
		// holds it.)
		if len(v) >= policy.MinSecretLen && !strings.ContainsAny(v, "%\\&") && bytes.Contains(got, []byte(sp)) {
			t.Fatalf("%q spelled %q went through: %q", v, sp, got)
		}
		if refMask(sc, append([]byte{}, got...)) {
			t.Fatalf("%q: the reference finds a spelling of %q left in %q", src, v, got)
		}
		if !refMask(sc, append([]byte{}, src...)) && !bytes.Equal(got, src) {
			t.Fatalf("%q has no spelling of %q but was changed to %q", src, v, got)
		}
		if whole := sc.String(string(src)); refMask(sc, []byte(whole)) || len(whole) != len(src) {
			t.Fatalf("String(%q) = %q", src, whole)
		}
	})
}
