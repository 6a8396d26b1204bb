package workspace

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// benchRoot holds the trees benchmarks make, removed when the test
// process ends (TestMain).
var benchRoot struct {
	once sync.Once
	dir  string
	err  error
}

// benchDir is a new directory for a benchmark's trees, kept until the
// test process ends. b.TempDir removes its trees after every round, and on
// a filesystem without a journal (this machine's ext4) the kernel then
// skips the inodes just freed on every file created in the next minute,
// six while their inode table is not yet written back (ext4's
// recently_deleted): files created after a mass removal cost several
// times the CPU. A round, or the next benchmark, would measure the last
// one's clean-up instead of its own work.
func benchDir(b *testing.B) string {
	b.Helper()
	benchRoot.once.Do(func() { benchRoot.dir, benchRoot.err = os.MkdirTemp("", "agentbox-workspace-bench-") })
	if benchRoot.err != nil {
		b.Fatal(benchRoot.err)
	}
	d, err := os.MkdirTemp(benchRoot.dir, "")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot.dir != "" {
		if err := RemoveTree(benchRoot.dir); err != nil {
			fmt.Fprintln(os.Stderr, "removing the benchmarks' trees:", err)
		}
	}
	os.Exit(code)
}
