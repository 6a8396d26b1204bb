package docker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// BenchmarkStartMasks compares session start (create, start, hello,
// close) with 50 masked paths against none (issue 10: at most 100 ms more).
func BenchmarkStartMasks(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("masked=%d", n), func(b *testing.B) {
			ws := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("k%02d.key", i)), []byte("secret"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			cfg := testutil.Config(b, ws)
			cfg.ReadDeny, cfg.WriteDeny = readDeny, writeDeny
			rt := testutil.Runtime(b)
			b.ResetTimer()
			for range b.N {
				s, err := rt.Start(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if s.Info().Masked != n {
					b.Fatalf("masked %d, want %d", s.Info().Masked, n)
				}
				_ = s.Close(context.Background())
			}
		})
	}
}
