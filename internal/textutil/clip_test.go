package textutil

import "testing"

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"héllo", 2, "h…"}, // never cuts inside é
		{"abc", 0, "…"},
	} {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := OneLine(" a\n\tb  c ", 10); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}
