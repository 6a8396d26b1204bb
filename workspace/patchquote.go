package workspace

import (
	"fmt"
	"strings"
)

// gitPath is prefix+p as git writes it in a patch header: quoted in C
// style when it holds a control character, a double quote, a backslash or
// DEL (git apply reads it back), so that a file name cannot carry a raw
// terminal escape sequence into the patch or the reviewer's terminal.
func gitPath(prefix, p string) string { return quoteC(prefix+p, false) }

// QuotePath is a workspace path as git's status and diff --stat print it
// (core.quotePath, the default): quoted in C style when it holds a
// control character, a double quote, a backslash, DEL or any byte above
// ASCII, so that two names never print alike ("nl\nx.txt" and "nl x.txt").
func QuotePath(p string) string { return quoteC(p, true) }

func quoteC(s string, high bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r == 0x7f || high && r >= 0x80 }) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c == 0x7f || high && c >= 0x80 {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
