package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type wordKind uint8

const (
	wStatic  wordKind = iota // value known: quotes removed
	wGlob                    // unquoted glob or brace pattern: expanded at run time
	wDynamic                 // contains an expansion: known only at run time
)

// word is one analysed shell word.
type word struct {
	text   string // the value for static and glob words; the source text otherwise
	kind   wordKind
	prefix string // dynamic: literal text known to start the value
	suffix string // dynamic: literal text known to end the value
	split  bool   // unquoted expansion: may become zero or several words
}

func staticWord(s string) word { return word{text: s} }

// cmdline is the argv of one simple command as far as it is known.
type cmdline struct {
	words []word
	open  bool // more arguments are appended at run time (xargs, find -exec ... +)
}

func (c *cmdline) argv() []string {
	out := make([]string, len(c.words))
	for i, w := range c.words {
		out[i] = w.text
	}
	return out
}

// allStatic returns the values of the words if every one is static.
func allStatic(ws []word) ([]string, bool) {
	out := make([]string, len(ws))
	for i, w := range ws {
		if w.kind != wStatic {
			return nil, false
		}
		out[i] = w.text
	}
	return out, true
}

// unescapeUnquoted removes backslash quoting from an unquoted literal:
// "\x" is "x" and a backslash-newline disappears.
func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] != '\n' {
				sb.WriteByte(s[i])
			}
			continue
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// unescapeDouble removes backslash quoting inside double quotes, where a
// backslash only quotes $ ` " \ and newline. Heredoc bodies with an
// unquoted delimiter follow the same rule except for '"' (dq false).
func unescapeDouble(s string) string { return unescapeSome(s, true) }

func unescapeSome(s string, dq bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch c := s[i+1]; {
			case c == '$' || c == '`' || c == '\\' || (dq && c == '"'):
				sb.WriteByte(c)
				i++
				continue
			case c == '\n':
				i++
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// ansiC decodes the body of a $'...' string as bash does.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case '\\', '\'', '"', '?':
			sb.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				sb.WriteByte(s[i] & 0x1f)
			} else {
				sb.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHexDigit(s[j]) {
				j++
			}
			if j == i+1 {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				sb.WriteByte(byte(n))
			} else if n <= utf8.MaxRune {
				sb.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			sb.WriteByte(byte(n))
			i = j - 1
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return sb.String()
}

// globChars reports whether an unquoted literal (after unescaping, with
// escaped positions marked) holds pathname or brace expansion.
func unquotedExpands(raw string) bool {
	// raw still has its backslashes: an escaped character never expands.
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.IndexByte(raw[i+1:], ']') >= 0 {
				return true
			}
		case '{':
			end := strings.IndexByte(raw[i+1:], '}')
			if end >= 0 {
				in := raw[i+1 : i+1+end]
				if strings.Contains(in, ",") || strings.Contains(in, "..") {
					return true
				}
			}
		}
	}
	return false
}

// isName reports whether s is a valid shell variable name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// hasUnsafeRune reports whether s holds anything but printable ASCII.
func hasUnsafeRune(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return true
		}
	}
	return false
}
