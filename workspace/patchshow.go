package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ShowPatch is a patch as `agentbox changes SESSION` prints it, whatever
// its output is (a terminal, a pipe into less -R, a file): every control
// character but newline and tab is shown as an escape, so that what the
// agent wrote cannot drive the reviewer's terminal. A C0 control or DEL
// is \xNN (ESC is \x1b, BEL \x07, CR \x0d); a byte that is not UTF-8 is
// \xNN too (a lone 0x9b is a CSI on 8-bit terminals); a C1 control
// (U+0080 to U+009F) or a bidirectional formatting character (U+202E,
// which reorders what is shown) is \uNNNN. Everything else is kept, so
// the patch stays readable; the escapes are not reversible (a file may
// hold the text \x1b itself): the exact bytes are in the session's
// changes.patch. n is how many characters were escaped.
func ShowPatch(s string) (shown string, n int) {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if escapeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
			n++
		case escapeRune(r, size) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
			n++
		case escapeRune(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
			n++
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

// escapeRune reports whether the rune r (size bytes of the input; a
// RuneError of size 1 is a byte that is not UTF-8) is shown escaped.
func escapeRune(r rune, size int) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r == utf8.RuneError && size <= 1:
		return true
	case r <= 0x9f: // C1 controls
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional formatting
	}
	return false
}
