package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

// benchBackends are the two backends side by side: a start function on a
// small workspace (10 files) each.
func benchBackends(b *testing.B) map[string]func(b *testing.B) sandbox.Session {
	ws := b.TempDir()
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(ws, "f"+string(rune('0'+i))), []byte("content\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	start := func(b *testing.B, rt sandbox.Runtime, cfg sandbox.Config) sandbox.Session {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, err := rt.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	return map[string]func(b *testing.B) sandbox.Session{
		"docker": func(b *testing.B) sandbox.Session {
			return start(b, testutil.Runtime(b), testutil.Config(b, ws))
		},
		"kubernetes": func(b *testing.B) sandbox.Session {
			return start(b, testRuntime(b), sandbox.Config{Workspace: ws, WorkspaceCopy: true})
		},
	}
}

// BenchmarkSessionStart: from creating the sandbox (container or pod) to
// the executor's first answer, the workspace copied in on Kubernetes;
// closing is not counted.
func BenchmarkSessionStart(b *testing.B) {
	for _, name := range []string{"docker", "kubernetes"} {
		b.Run(name, func(b *testing.B) {
			startFn := benchBackends(b)[name]
			for range b.N {
				s := startFn(b)
				b.StopTimer()
				_ = s.Close(context.Background())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkWarmExec: one `true` in a running sandbox, over the attach
// stream (Docker's hijacked connection; the API server's WebSocket to the
// kubelet on Kubernetes).
func BenchmarkWarmExec(b *testing.B) {
	for _, name := range []string{"docker", "kubernetes"} {
		b.Run(name, func(b *testing.B) {
			s := benchBackends(b)[name](b)
			defer s.Close(context.Background())
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %v %d", err, res.ExitCode)
				}
			}
		})
	}
}
