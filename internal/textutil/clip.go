// Package textutil shortens text for display: the one place that clips.
package textutil

import "strings"

// Clip shortens s to at most n bytes, cut on a rune boundary, with "…"
// appended when something was cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := max(n, 0)
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// OneLine flattens s to one line (runs of white space become one space)
// and clips it to n bytes.
func OneLine(s string, n int) string {
	return Clip(strings.Join(strings.Fields(s), " "), n)
}
