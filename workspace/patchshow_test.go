package workspace

import "testing"

// ShowPatch escapes every control character but newline and tab, bytes
// that are not UTF-8, C1 controls and bidirectional overrides, and keeps
// the rest (other non-ASCII text included) as it is.
func TestShowPatch(t *testing.T) {
	for _, c := range []struct {
		in, want string
		n        int
	}{
		{"+plain\n-text\twith tab\n", "+plain\n-text\twith tab\n", 0},
		{"+\x1b[2J\a\r\n", `+\x1b[2J\x07\x0d` + "\n", 3},
		{"+\x1b]0;pwned\x07done\n", `+\x1b]0;pwned\x07done` + "\n", 2},
		{"+caf\u00e9 \u65e5\u672c\n", "+caf\u00e9 \u65e5\u672c\n", 0},
		{"+\x9b31m red\n", `+\x9b31m red` + "\n", 1},
		{"+\u009b31m\u202eevil\x7f\n", `+\u009b31m\u202eevil\x7f` + "\n", 3},
		{"+\xff\xfe\n", `+\xff\xfe` + "\n", 2},
	} {
		got, n := ShowPatch(c.in)
		if got != c.want || n != c.n {
			t.Errorf("ShowPatch(%q) = %q, %d; want %q, %d", c.in, got, n, c.want, c.n)
		}
	}
}
