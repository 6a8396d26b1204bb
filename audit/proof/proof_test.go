package proof

import (
	"fmt"
	"strings"
	"testing"
)

func TestRoundTripAndTamper(t *testing.T) {
	skey, vkey, err := KeyGen("t.example")
	if err != nil {
		t.Fatal(err)
	}
	var tr Tree
	for i := range 37 {
		tr.Add(fmt.Appendf(nil, `{"seq":%d}`, i+1))
	}
	note, err := Sign(&tr, 20, "", skey)
	if err != nil || !IsNote(note) {
		t.Fatalf("%v %q", err, note)
	}
	cp, err := Open(note, vkey)
	if err != nil || cp.Size != 20 || cp.Origin != "t.example" {
		t.Fatalf("%v %+v", err, cp)
	}
	for line := int64(1); line <= 20; line++ {
		p, err := ProveInclusion(&tr, line, 20)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseInclusion(p.String())
		if err != nil || back.Check(cp) != nil {
			t.Fatalf("line %d: %v %v", line, err, back.Check(cp))
		}
		back.Leaf[0] ^= 1
		if back.Check(cp) == nil {
			t.Fatalf("line %d: a changed record hash passed", line)
		}
	}
	big, _ := Open(mustSign(t, &tr, 37, skey), vkey)
	c, err := ProveConsistency(&tr, 20, 37)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConsistency(c.String())
	if err != nil || back.Check(cp, big) != nil {
		t.Fatalf("%v %v", err, back.Check(cp, big))
	}
	var other Tree // same size, one leaf differs
	for i := range 37 {
		s := fmt.Sprintf(`{"seq":%d}`, i+1)
		if i == 3 {
			s = `{"seq":4,"x":1}`
		}
		other.Add([]byte(s))
	}
	forged, _ := Open(mustSign(t, &other, 37, skey), vkey)
	if back.Check(cp, forged) == nil {
		t.Fatal("a consistency proof held for a rewritten log")
	}
	if _, err := Open(note, mustVKey(t)); err == nil {
		t.Fatal("another key verified the note")
	}
}

func mustSign(t *testing.T, tr *Tree, n int64, skey string) []byte {
	b, err := Sign(tr, n, "", skey)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustVKey(t *testing.T) string {
	_, v, err := KeyGen("t.example")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func FuzzParse(f *testing.F) {
	f.Add("3\n1\nhN2PD0egd1+pM/RX7kIjgoPAtZxiuJ+BbTGSjbPQ/JU=\n")
	f.Add("o\n3\nDd34+A+qfYwXzqY9Pi4qUqkYclcFRPTaeUNyj7DzD94=\n")
	f.Fuzz(func(t *testing.T, s string) {
		ParseInclusion(s)
		ParseConsistency(s)
		if c, err := ParseCheckpoint(s); err == nil && c.Size < 1 {
			t.Fatalf("size %d accepted", c.Size)
		}
	})
}

// BenchmarkReadTree10k is the tree of a 10,000-record log (about 5 MB):
// the cost of an automatic checkpoint (audit.checkpoints) at close.
func BenchmarkReadTree10k(b *testing.B) {
	line := `{"v":1,"seq":1,"time":"2026-12-01T12:00:00.000000Z","session":"s","event":"tool_call","call_id":"c","tool":"execute_bash","args":{"command":"ls -la"},"output_preview":"` + strings.Repeat("x", 380) + `","prev":"` + strings.Repeat("0", 64) + `"}` + "\n"
	log := strings.Repeat(line, 10000)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		if _, err := ReadTree(strings.NewReader(log)); err != nil {
			b.Fatal(err)
		}
	}
}
