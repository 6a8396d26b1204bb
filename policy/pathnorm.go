package policy

import (
	"errors"
	"strings"
)

// NormalizePath is the request path as an upstream will read it, from
// the path as sent (escaped, without the query): percent escapes of
// unreserved characters are decoded (RFC 3986 6.2.2.2, upper-case hex for
// the rest), runs of slashes are merged and dot segments removed (RFC 3986
// 5.2.4; ".." never climbs above the root). A trailing slash is kept: the
// upstream sees it; rules match with or without it. What stays ambiguous
// between servers is an error: an encoded slash or backslash (%2F, %5C),
// a backslash, NUL, a bad percent escape.
func NormalizePath(escaped string) (string, error) {
	if escaped == "" || escaped == "*" {
		return "/", nil
	}
	if escaped[0] != '/' {
		return "", errors.New("the path does not start with /")
	}
	var b strings.Builder
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		switch {
		case c == '\\':
			return "", errors.New("a backslash in the path is a separator to some servers and not to others")
		case c < 0x20 || c == 0x7f:
			return "", errors.New("a control character in the path")
		case c != '%':
			b.WriteByte(c)
			continue
		}
		d, ok := PercentByte(escaped[i:])
		if !ok {
			return "", errors.New("a bad percent escape in the path")
		}
		switch {
		case d == '/' || d == '\\':
			return "", errors.New("an encoded slash or backslash (%2F, %5C) is a separator to some servers and not to others")
		case d == 0:
			return "", errors.New("an encoded NUL in the path")
		case isUnreserved(d):
			b.WriteByte(d)
		default:
			b.WriteString("%" + strings.ToUpper(escaped[i+1:i+3]))
		}
		i += 2
	}
	return removeDots(b.String()), nil
}

// removeDots merges empty segments and resolves "." and "..".
func removeDots(p string) string {
	trailing := strings.HasSuffix(p, "/")
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch s {
		case "", ".":
			if i == len(segs)-1 && s == "." {
				trailing = true
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				trailing = true
			}
		default:
			out = append(out, s)
		}
	}
	r := "/" + strings.Join(out, "/")
	if trailing && r != "/" {
		r += "/"
	}
	return r
}

// matchPath is the form of a normalised path that rules match: fully
// percent-decoded, without a trailing slash (but "/"), lower-cased unless
// the rule is case-sensitive.
func matchPath(norm string, caseSensitive bool) string {
	var b strings.Builder
	for i := 0; i < len(norm); i++ {
		if d, ok := PercentByte(norm[i:]); ok {
			b.WriteByte(d)
			i += 2
			continue
		}
		b.WriteByte(norm[i])
	}
	p := b.String()
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	if !caseSensitive {
		p = strings.ToLower(p)
	}
	return p
}

// rulePattern is a path glob as rules match it: without a trailing slash
// (but "/"), lower-cased unless the rule is case-sensitive.
func rulePattern(p string, caseSensitive bool) string {
	if len(p) > 1 && !strings.HasSuffix(p, "/**") {
		p = strings.TrimSuffix(p, "/")
	}
	if !caseSensitive {
		p = strings.ToLower(p)
	}
	return p
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
