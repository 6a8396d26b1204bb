package policy

import (
	"fmt"
	"strings"
	"unicode"
)

// Visible returns s with every character that could hide or disguise text
// in an approval prompt shown as <U+XXXX>: control characters (except
// newline and tab), format characters such as zero-width spaces and
// bidirectional overrides, non-ASCII spaces, combining marks, invalid
// UTF-8, and letters commonly confused with ASCII (fullwidth forms,
// Cyrillic, Greek). Other text, including other non-ASCII letters, is kept.
func Visible(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var sb strings.Builder
	for i, r := range s {
		if r == unicode.ReplacementChar && !strings.HasPrefix(s[i:], "\uFFFD") {
			fmt.Fprintf(&sb, "<0x%02X>", s[i])
			continue
		}
		if hidden(r) {
			fmt.Fprintf(&sb, "<U+%04X>", r)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x7f:
		return false
	case r >= 0x80 && r < 0xa0: // C1 controls
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r),
		unicode.Is(unicode.Zs, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r), !unicode.IsPrint(r) && !unicode.IsGraphic(r):
		return true
	case r >= 0xff00 && r <= 0xffef: // halfwidth and fullwidth forms
		return true
	case unicode.Is(unicode.Cyrillic, r), unicode.Is(unicode.Greek, r):
		return true
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef: // variation selectors
		return true
	case r == 0x115f || r == 0x1160 || r == 0x3164 || r == 0xffa0: // Hangul fillers
		return true
	}
	return false
}
