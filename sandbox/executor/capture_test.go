package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestCapture(t *testing.T) {
	for _, c := range []struct {
		name   string
		limit  int
		writes []string
		want   string // kept output; "…" stands for the marker
	}{
		{name: "empty", limit: 8, writes: nil, want: ""},
		{name: "fits", limit: 8, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "exactly the limit", limit: 8, writes: []string{"abcdefgh"}, want: "abcdefgh"},
		{name: "one write over", limit: 8, writes: []string{"abcdefghij"}, want: "abcd…ghij"},
		{name: "many small writes", limit: 8, writes: strings.Split("abcdefghijklmnop", ""), want: "abcd…mnop"},
		{name: "ring wraps several times", limit: 6, writes: []string{"12", "345", "6789", "ab", "cdefg"}, want: "123…efg"},
		{name: "odd limit", limit: 5, writes: []string{"0123456789"}, want: "01…789"},
		{name: "tail write larger than the tail", limit: 4, writes: []string{"ab", "cdefghij"}, want: "ab…ij"},
		{name: "zero limit", limit: 0, writes: []string{"abc"}, want: "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := newCapture(c.limit)
			var all strings.Builder
			for _, w := range c.writes {
				if n, err := cp.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				all.WriteString(w)
			}
			out, truncated, total, sum := cp.result()
			if total != int64(all.Len()) {
				t.Errorf("total %d, want %d", total, all.Len())
			}
			h := sha256.Sum256([]byte(all.String()))
			if sum != hex.EncodeToString(h[:]) {
				t.Errorf("sha256 is not of the whole stream")
			}
			head, tail, marked := strings.Cut(c.want, "…")
			if truncated != marked {
				t.Errorf("truncated = %v, want %v", truncated, marked)
			}
			got := string(out)
			if !marked {
				if got != c.want {
					t.Errorf("out %q, want %q", got, c.want)
				}
				return
			}
			if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, tail) || !strings.Contains(got, "bytes omitted by agentbox") {
				t.Errorf("out %q, want head %q, marker, tail %q", got, head, tail)
			}
			if kept := len(head) + len(tail); kept > c.limit {
				t.Errorf("kept %d bytes over the limit %d", kept, c.limit)
			}
		})
	}
}
