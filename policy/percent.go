package policy

// PercentByte is the byte the percent escape at the start of s spells
// (%72, either case of hex digit) and whether s starts with one. Path
// normalisation and the credentials broker's scrubbing decode escapes
// with it, so both read a path or a body the same way.
func PercentByte[T ~string | ~[]byte](s T) (byte, bool) {
	if len(s) < 3 || s[0] != '%' {
		return 0, false
	}
	return HexByte(s[1], s[2])
}

// HexByte is the byte two hexadecimal digits spell (either case), and
// whether both are hex digits.
func HexByte(hi, lo byte) (byte, bool) {
	h, ok1 := hexVal(hi)
	l, ok2 := hexVal(lo)
	return h<<4 | l, ok1 && ok2
}

// hexVal is the value of one hexadecimal digit (either case).
func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isHexDigit(c byte) bool {
	_, ok := hexVal(c)
	return ok
}
