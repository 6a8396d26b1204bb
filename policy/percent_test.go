package policy

import "testing"

func TestPercentByte(t *testing.T) {
	for in, want := range map[string]int{"%72": 'r', "%2f/x": '/', "%2F": '/', "%Aa": 0xaa, "%00": 0,
		"%7": -1, "%7g": -1, "72": -1, "": -1, "%%72": -1, "%g2": -1} {
		got, ok := PercentByte(in)
		gotB, okB := PercentByte([]byte(in))
		if got != gotB || ok != okB {
			t.Errorf("%q: string %d %v, bytes %d %v", in, got, ok, gotB, okB)
		}
		if want < 0 && ok || want >= 0 && (!ok || int(got) != want) {
			t.Errorf("PercentByte(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
}
