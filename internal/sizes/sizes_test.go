package sizes

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "16KiB": 16 << 10, "16kib": 16 << 10, "16k": 16 << 10, "512MB": 512e6,
		"512MiB": 512 << 20, "1g": 1 << 30, "1GiB": 1 << 30, "2GB": 2e9, "1.5GiB": 3 << 29, " 8 MiB ": 8 << 20,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "12 parsecs", "1e9"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}
