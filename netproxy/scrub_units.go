package netproxy

import (
	"slices"

	"github.com/agentbox/agentbox/policy"
)

// maxUnit is the longest spelling of one byte the scrubber decodes
// (&#x0000072; is refused: at most 7 digits in a character reference).
const maxUnit = 11

// matchAt is the length of the longest spelling of v that starts b, or 0.
// Where v has a '%', '\\' or '&' and b an escape starting with it, both
// readings are followed: "a%41" is the literal value a%41 as well as aA.
func matchAt(b, v []byte) int {
	p := 0
	for k, want := range v {
		c, n := unit(b[p:])
		if n == 0 {
			return 0
		}
		if n > 1 && b[p] == want {
			return matchEvery(b, v[k:], p)
		}
		if lower(c) != lower(want) {
			return 0
		}
		p += n
	}
	return p
}

// matchEvery follows every reading of v from b[p:] at once: the end of the
// longest spelling, or 0.
func matchEvery(b, v []byte, p int) int {
	at := []int{p}
	for _, want := range v {
		var next []int
		for _, p := range at {
			c, n := unit(b[p:])
			if n > 0 && lower(c) == lower(want) && !slices.Contains(next, p+n) {
				next = append(next, p+n)
			}
			if n > 1 && b[p] == want && !slices.Contains(next, p+1) {
				next = append(next, p+1)
			}
		}
		if len(next) == 0 {
			return 0
		}
		at = next
	}
	return slices.Max(at)
}

// unit decodes the byte spelled at the start of b and its length (0: b is
// empty).
func unit(b []byte) (byte, int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case '%':
		if c, ok := policy.PercentByte(b); ok {
			return c, 3
		}
	case '\\':
		if len(b) >= 6 && (b[1] == 'u' || b[1] == 'U') && b[2] == '0' && b[3] == '0' {
			if c, ok := policy.HexByte(b[4], b[5]); ok {
				return c, 6
			}
		}
		if len(b) >= 4 && (b[1] == 'x' || b[1] == 'X') {
			if c, ok := policy.HexByte(b[2], b[3]); ok {
				return c, 4
			}
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
		if d, ok := policy.HexByte('0', c); ok && (base == 16 || c <= '9') {
			v = v*base + int(d)
			continue
		}
		if c == ';' && i > start && v < 0x100 {
			return byte(v), i + 1
		}
		break
	}
	return '&', 1
}

// unitStarts are the bytes a spelling of c can start with.
func unitStarts(c byte) []byte { return []byte{lower(c), upper(c), '%', '\\', '&'} }

// escapeBytes are the bytes the escapes unit decodes are made of.
const escapeBytes = "%\\&#;uUxX0123456789abcdefABCDEF"

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
