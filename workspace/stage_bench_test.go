package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// benchStage makes a workspace of n files and a stage over it, in a
// directory kept until the test process ends (benchDir).
func benchStage(b *testing.B, n int) (lower, upper, state string) {
	return benchStageIn(b, benchDir(b), n)
}

func benchStageIn(b *testing.B, base string, n int) (lower, upper, state string) {
	b.Helper()
	lower, upper, state = filepath.Join(base, "ws"), filepath.Join(base, "upper"), filepath.Join(base, "state")
	GenerateTree(b, lower, n)
	if err := os.Mkdir(upper, 0o755); err != nil {
		b.Fatal(err)
	}
	return lower, upper, state
}

// BenchmarkStagedCallIdle10 and ...60000: the host's after-call step on a
// staged workspace when the call changed one file, on a 10-file and a
// 60,000-file workspace: it reads the upper layer only, so both cost the
// same (the in-sandbox effects walk it replaces cost ∝ the workspace).
func BenchmarkStagedCallIdle10(b *testing.B)    { benchIdle(b, 10) }
func BenchmarkStagedCallIdle60000(b *testing.B) { benchIdle(b, 60000) }

func benchIdle(b *testing.B, n int) {
	lower, upper, state := benchStage(b, n)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		writeFile(b, filepath.Join(upper, "out.txt"), fmt.Sprint(i))
		if _, err := s.Promote(fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPromote1, 100 and 10000: promoting a call that added that many
// files (ns/op is one whole promotion), the disk settled first (what the
// set-up wrote is written back), as for BenchmarkCreate10000Native.
func BenchmarkPromote1(b *testing.B)     { benchPromote(b, 1) }
func BenchmarkPromote100(b *testing.B)   { benchPromote(b, 100) }
func BenchmarkPromote10000(b *testing.B) { benchPromote(b, 10000) }

func benchPromote(b *testing.B, n int) {
	benchCall(b, n, func(s *Stage) (int, error) {
		cp, err := s.Promote("call")
		if err != nil {
			return 0, err
		}
		return len(cp.Promoted()), nil
	})
}

// benchCall times step (which returns how many changes it handled) on a
// stage whose upper layer has n new files in 100 directories, the disk
// settled first.
func benchCall(b *testing.B, n int, step func(s *Stage) (int, error)) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lower, upper, state := benchStage(b, 10)
		for j := range n {
			writeFile(b, filepath.Join(upper, fmt.Sprintf("d%d", j%100), fmt.Sprintf("f%d.txt", j)), "content\n")
		}
		s, err := OpenStage(upper, lower, state, nil)
		if err != nil {
			b.Fatal(err)
		}
		unix.Sync()
		b.StartTimer()
		if got, err := step(s); err != nil || got < n {
			b.Fatalf("%v %d", err, got)
		}
	}
}

// BenchmarkCreate10000Native (baseline for BenchmarkPromote10000): the
// same 10,000 files in 100 directories created straight into a directory
// on the same filesystem by plain os.WriteFile, on 2×GOMAXPROCS
// goroutines: what the filesystem itself charges for the files that
// promotion must make, with nothing of agentbox's around it; the disk
// settled first, as for BenchmarkPromote10000.
func BenchmarkCreate10000Native(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := benchDir(b)
		for d := range 100 {
			if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%d", d)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		unix.Sync()
		b.StartTimer()
		var wg sync.WaitGroup
		workers := 2 * runtime.GOMAXPROCS(0)
		for w := range workers {
			wg.Go(func() {
				for j := w; j < 10000; j += workers {
					name := filepath.Join(dir, fmt.Sprintf("d%d", j%100), fmt.Sprintf("f%d.txt", j))
					if err := os.WriteFile(name, []byte("content\n"), 0o644); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

// BenchmarkRewind100: rewinding a call that edited 100 files.
func BenchmarkRewind100(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lower, upper, state := benchStageIn(b, b.TempDir(), 1000) // 1,000 files a round: not kept
		s, err := OpenStage(upper, lower, state, nil)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 100 {
			writeFile(b, filepath.Join(upper, fmt.Sprintf("r%d.txt", j)), "edited\n")
		}
		if _, err := s.Promote("call"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res, err := s.Rewind("call"); err != nil || len(res.Restored) != 100 {
			b.Fatalf("%v", err)
		}
	}
}

// BenchmarkPromoteHeld1: the after-call step when the call wrote one held
// file (.envrc): listed, decided, renamed out of the upper layer, copied
// for review, cut and removed (against BenchmarkStagedCallIdle10, one
// promoted file).
func BenchmarkPromoteHeld1(b *testing.B) {
	lower, upper, state := benchStage(b, 10)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		writeFile(b, filepath.Join(upper, ".envrc"), fmt.Sprint(i))
		cp, err := s.Promote(fmt.Sprint(i))
		if err != nil || cp == nil || len(cp.HeldChanges()) != 1 {
			b.Fatalf("%v %v", cp, err)
		}
	}
}

// BenchmarkDecide10000: listing and deciding a call that added 10,000
// files, what a bulk call's result waits for (the copies go on while the
// model thinks: AfterCallDeferred).
func BenchmarkDecide10000(b *testing.B) {
	benchCall(b, 10000, func(s *Stage) (int, error) {
		cp, err := s.decideCall("call")
		if err != nil {
			return 0, err
		}
		return len(cp.Changes), nil
	})
}
