package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// GenerateTree writes n small files below dir, 500 per directory.
func GenerateTree(t testing.TB, dir string, n int) {
	t.Helper()
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/500))
		if i%500 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
