package textutil

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFit(t *testing.T) {
	for _, c := range []struct {
		in   string
		cols int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello world", 6, "hello…"},
		{"日本語のタスク", 7, "日本語…"}, // 6 columns and the ellipsis
		{"日本語", 6, "日本語"},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"},
		{"résumé ✓ done", 8, "résumé …"},
		{"e\u0301\u0301x", 2, "e\u0301\u0301x"}, // combining marks take no column
		{"tab\there\x1b[2J", 40, "tab here [2J"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	} {
		got := Fit(c.in, c.cols)
		if got != c.want {
			t.Errorf("Fit(%q, %d) = %q, want %q", c.in, c.cols, got, c.want)
		}
		if !utf8.ValidString(got) || Width(got) > c.cols || strings.ContainsRune(got, utf8.RuneError) {
			t.Errorf("Fit(%q, %d) = %q: %d columns or broken", c.in, c.cols, got, Width(got))
		}
	}
}
