package executor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// BenchmarkExecTraceOverhead compares a warm call with exec-time
// enforcement against the same call without it, interleaved so that both
// see the same machine load (issues 10 and 24: at most 1 ms more for
// `ls | wc -l`). Enforcement is all of it: every exec judged, the program
// identified by content against a manifest of the executables (on the
// host's writable root every exec is hashed, the worst case; an image's
// read-only root is hashed once per file), and checked against the
// programs predicted up front. It reports the medians and their
// difference.
func BenchmarkExecTraceOverhead(b *testing.B) {
	root := b.TempDir()
	m := &sandbox.Manifest{}
	for _, name := range []string{"ls", "wc", "bash"} {
		p, err := exec.LookPath(name)
		if err != nil {
			b.Skip(err)
		}
		if p, err = filepath.EvalSymlinks(p); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		m.Programs = append(m.Programs, sandbox.ManifestProgram{Size: fi.Size(), Paths: []string{p}})
	}
	traced := &Server{judge: newCachedJudge(denyJudge), ids: newIdentities(m, ""), cap: 1 << 16, ooms: -1, descendantsOnly: true, testRoot: root}
	plain := &Server{cap: 1 << 16, ooms: -1, descendantsOnly: true, testRoot: root, noTrace: true}
	traced.tracer, plain.tracer = newTracer(), newTracer()
	var cpuT, cpuP time.Duration
	call := func(s *Server, cpu *time.Duration) time.Duration {
		c0 := cpuTime()
		t0 := time.Now()
		resp := s.exec(&wire.Request{Command: "ls | wc -l", TimeoutMS: 10_000, Expect: []string{"ls", "wc"}})
		if resp.ExitCode != 0 || len(resp.Alarms) != 0 {
			b.Fatalf("exit %d: %s %s", resp.ExitCode, resp.Output, resp.Error)
		}
		d := time.Since(t0)
		*cpu += cpuTime() - c0
		return d
	}
	var dt, dp []time.Duration
	for b.Loop() {
		dp = append(dp, call(plain, &cpuP))
		dt = append(dt, call(traced, &cpuT))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	mt, mp := med(dt), med(dp)
	b.ReportMetric(mp, "untraced-ms")
	b.ReportMetric(mt, "traced-ms")
	b.ReportMetric(mt-mp, "added-ms")
	n := float64(len(dt)) * 1e6
	b.ReportMetric(float64(cpuT-cpuP)/n, "added-cpu-ms")
}

// cpuTime is the CPU time used by this process and its reaped children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// BenchmarkEffectsCheck is the post-call check on a workspace of n files
// in n/100 directories, under the default policy's kind of deny globs.
func BenchmarkEffectsCheck(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			root := b.TempDir()
			for i := range n {
				dir := filepath.Join(root, fmt.Sprintf("d%d", i%(n/100)))
				_ = os.MkdirAll(dir, 0o755)
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), nil, 0o644)
			}
			e, err := newEffects(root, &wire.Rules{Deny: []string{".git/config", ".git/hooks/**", ".git/commondir", ".git/modules/**", "**/.git/config", "**/.envrc", "agentbox.yaml", ".vscode/tasks.json"}}, matchFile)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if a := e.check(); len(a) != 0 {
					b.Fatal(a)
				}
			}
		})
	}
}
