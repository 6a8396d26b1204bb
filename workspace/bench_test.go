package workspace

import (
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// BenchmarkSnapshot60000: one stat snapshot of a 60,000-file workspace
// (rw mode takes two per run, plus hashing only what changed).
func BenchmarkSnapshot60000(b *testing.B) {
	dir := benchDir(b)
	GenerateTree(b, dir, 60000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Snapshot(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOverlayCopy60000: making an overlay copy of a 60,000-file
// workspace, scanning its (one-file) change set and applying it.
func BenchmarkOverlayCopy60000(b *testing.B) { benchCopy(b, 60000) }

// BenchmarkOverlayCopy10 is the same on 10 files.
func BenchmarkOverlayCopy10(b *testing.B) { benchCopy(b, 10) }

func benchCopy(b *testing.B, n int) {
	base := benchDir(b)
	src := filepath.Join(base, "ws")
	GenerateTree(b, src, n)
	store := Store{Dir: filepath.Join(base, "work")}
	fsclock.Tick(b, src)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cp, err := NewCopy(store, src, CopyOptions{Session: "00000000000000000000" + string(rune('a'+i%6)) + "0000" + itoa3(i)})
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, filepath.Join(cp.Upper(), "new.txt"), "new\n")
		if _, err := cp.Finish(); err != nil {
			b.Fatal(err)
		}
		_ = cp.Remove()
	}
}

func itoa3(i int) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[(i>>8)&15], hex[(i>>4)&15], hex[i&15]})
}
