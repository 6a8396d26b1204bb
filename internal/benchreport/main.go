// Command benchreport is `make bench`: it measures agentbox against
// baselines in the same run (native fork/exec, the Docker exec API,
// `docker run --rm`), runs the packages' Go benchmarks, and writes
// BENCHMARKS.md with medians and ratios.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

const image = "agentbox/base:latest"

type row struct {
	name   string
	n      int
	median time.Duration
	p90    time.Duration
	note   string
}

func main() {
	out := flag.String("o", "BENCHMARKS.md", "report file")
	calls := flag.Int("calls", 300, "warm calls per measurement")
	only := flag.String("only", "", "workspaces | writes | pool: measure only the workspace-size rows, the write-heavy call rows (needs AGENTBOX_BIN), or the Kubernetes warm pool rows, and print them (BENCHMARKS.md is not written)")
	builds := flag.Bool("image-builds", true, "measure a cold build of each toolchain image (minutes each, needs Debian's mirror)")
	flag.IntVar(&poolCfg.size, "pool-size", 6, "Kubernetes warm pool: idle pods kept")
	flag.Float64Var(&poolCfg.rate, "pool-rate", 10, "Kubernetes warm pool: Poisson claims per second")
	flag.IntVar(&poolCfg.claims, "pool-claims", 30, "Kubernetes warm pool: Poisson claims measured (in rounds of at most -pool-size, each from a full pool)")
	flag.IntVar(&poolCfg.burst, "pool-burst", 6, "Kubernetes warm pool: claims at once (more than -pool-size start cold pods beside the refill, which the 2-core node cannot schedule)")
	flag.IntVar(&poolCfg.cold, "pool-cold", 5, "Kubernetes: cold starts measured beside the pool")
	flag.IntVar(&poolCfg.execs, "pool-execs", 9, "one-shot agentbox exec -- true per backend (needs AGENTBOX_BIN)")
	flag.Parse()
	run := run
	switch *only {
	case "workspaces":
		run = func(string, int, bool) error { return onlyWorkspaces() }
	case "writes":
		run = func(string, int, bool) error { return onlyWrites() }
	case "pool":
		run = func(string, int, bool) error { return onlyPool() }
	}
	if err := run(*out, *calls, *builds); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func measure(n int, f func() error) (med, p90 time.Duration, err error) {
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)*9/10], nil
}

func run(out string, calls int, builds bool) error {
	ctx := context.Background()
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	exe := os.Getenv("AGENTBOX_BIN")
	rt, err := docker.Connect(ctx)
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	ws, _ := os.MkdirTemp("", "agentbox-bench-")
	defer os.RemoveAll(ws)
	cfg := sandbox.Config{Image: image, Workspace: ws, ExecutorPath: exe}

	var rows []row
	add := func(name string, n int, note string, f func() error) error {
		fmt.Fprintf(os.Stderr, "measuring %s (n=%d)\n", name, n)
		med, p90, err := measure(n, f)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, row{name, n, med, p90, note})
		return nil
	}

	if err := add("native fork/exec of `true` (baseline)", calls, "os/exec on the host", func() error {
		return exec.Command("true").Run()
	}); err != nil {
		return err
	}
	if err := add("native `bash --noprofile --norc -c true` (baseline)", calls, "what the executor runs, on the host", func() error {
		return exec.Command("bash", "--noprofile", "--norc", "-c", "true").Run()
	}); err != nil {
		return err
	}
	s, err := rt.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if err := add("warm call `true` through the executor", calls, "agentbox Session.Exec", func() error {
		r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
		if err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("exit %d", r.ExitCode)
		}
		return err
	}); err != nil {
		return err
	}
	// The floor inside the container: bash's own start-up there (seccomp,
	// overlay filesystem), timed by a loop in the container itself.
	inner, err := innerBash(ctx, s, 200)
	if err != nil {
		return err
	}
	rows = append(rows, row{"`bash --noprofile --norc -c true` inside the container (baseline)", 200, inner, 0, "mean of a loop in the sandbox: the command's own cost there"})
	cid := s.Info().ContainerID
	if err := add("the same call through the Docker exec API (baseline)", calls/6, "ContainerExecCreate+Attach+Inspect in the same container", func() error {
		return dockerExec(ctx, cli, cid)
	}); err != nil {
		return err
	}
	_ = s.Close(ctx)
	if err := add("session start: create to first answer", 15, "hardened container + executor hello + `true`", func() error {
		s, err := rt.Start(ctx, cfg)
		if err != nil {
			return err
		}
		_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
		if cerr := s.Close(ctx); err == nil {
			err = cerr
		}
		return err
	}); err != nil {
		return err
	}
	if err := add("`docker run --rm IMAGE true` (baseline)", 15, "docker CLI, default settings", func() error {
		return exec.Command("docker", "run", "--rm", "--network", "none", image, "true").Run()
	}); err != nil {
		return err
	}
	// (after the rows the ratios below index)
	if err := toolchainStarts(ctx, rt, cfg, add); err != nil {
		return err
	}
	if err := tierRows(ctx, rt, cfg, calls, add); err != nil {
		return err
	}
	// (after the rows the ratios below index)
	er, err := enforceRows(ctx, rt, cfg, calls)
	if err != nil {
		return err
	}
	rows = append(rows, er...)
	wsRows, err := workspaceRows(ctx, rt, exe)
	if err != nil {
		return fmt.Errorf("workspaces: %w", err)
	}
	rows = append(rows, wsRows...)
	wr, err := writeRows(ctx, exe)
	if err != nil {
		return fmt.Errorf("write-heavy call: %w", err)
	}
	rows = append(rows, wr...)
	pr, err := poolRows(ctx, poolCfg, exe)
	if err != nil {
		// The rest of the report stands; the row says what failed.
		fmt.Fprintln(os.Stderr, "kubernetes warm pool:", err)
		pr = append(pr, row{name: "Kubernetes warm pool", note: "not measured: " + oneLineErr(err)})
	}
	rows = append(rows, pr...)
	if builds {
		br, err := imageBuildRows(ctx, rt)
		if err != nil {
			return fmt.Errorf("image builds: %w", err)
		}
		rows = append(rows, br...)
	}
	gobench, err := goBenchmarks()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go benchmarks:", err)
	}
	return os.WriteFile(out, []byte(report(rows, gobench)), 0o644)
}

// innerBash times n runs of `bash -c true` by a loop inside the session and
// returns the mean per run.
func innerBash(ctx context.Context, s sandbox.Session, n int) (time.Duration, error) {
	cmd := fmt.Sprintf(`s=$(date +%%s%%N); for i in $(seq %d); do bash --noprofile --norc -c true; done; e=$(date +%%s%%N); echo $(( (e - s) / %d ))`, n, n)
	r, err := s.Exec(ctx, sandbox.ExecRequest{Command: cmd, Timeout: 2 * time.Minute})
	if err != nil {
		return 0, err
	}
	var ns int64
	if _, err := fmt.Sscan(string(r.Output), &ns); err != nil {
		return 0, fmt.Errorf("inner bash loop: %q: %w", r.Output, err)
	}
	return time.Duration(ns), nil
}

func dockerExec(ctx context.Context, cli *client.Client, cid string) error {
	ex, err := cli.ContainerExecCreate(ctx, cid, container.ExecOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	hj, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, hj.Reader)
	hj.Close()
	ins, err := cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return err
	}
	if ins.ExitCode != 0 {
		return fmt.Errorf("exit %d", ins.ExitCode)
	}
	return nil
}

// goBenchmarks runs the packages' Go benchmarks and returns their result
// lines.
func goBenchmarks() (string, error) {
	var pkgs []string
	for _, p := range []string{"./policy/", "./audit/", "./agent/", "./batch/", "./netproxy/", "./sandbox/executor/", "./sandbox/kubernetes/", "./workspace/"} {
		if _, err := os.Stat(p); err == nil {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return "", nil
	}
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "2s"}, pkgs...)
	cmd := exec.Command("go", args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	err := cmd.Run()
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		// A failing benchmark is shown with its message, not dropped.
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "pkg:") || strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "    ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n"), err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func report(rows []row, gobench string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` on %s (%s/%s, %d cores, %s). Every number below was measured in the same run as its baseline; nothing here is asserted by tests.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	b.WriteString("## Sandbox\n\n| measurement | n | median | p90 | note |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		p90 := "—"
		if r.p90 > 0 {
			p90 = ms(r.p90)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", r.name, r.n, ms(r.median), p90, r.note)
	}
	if len(rows) >= 7 {
		native, bash, warm, inner, api, start, run := rows[0].median, rows[1].median, rows[2].median, rows[3].median, rows[4].median, rows[5].median, rows[6].median
		overhead := fmt.Sprintf("costs %s more than", ms(warm-inner))
		if warm-inner < inner/20 {
			overhead = fmt.Sprintf("is within noise (%s) of", ms(warm-inner))
		}
		fmt.Fprintf(&b, "\nRatios: the Docker exec API takes **%.1f×** the executor's warm call. The warm call %s the same `bash -c true` run in a loop inside the container (%s there, %s natively: seccomp and the overlay filesystem make bash's start-up dearer in any container) — that difference is agentbox's per-call overhead: the framed channel through the engine's attach stream, the process sweep and the output hashing. Session start is **%.2f×** `docker run --rm` (target: ≤ 1). The issue's target for the warm call, p50 under 3 ms, assumed a machine where a fork/exec costs well under a millisecond; here a native fork/exec of `true` alone takes %s, so the warm call (%s) is bounded below by bash's own start-up; the overhead agentbox adds is what the target was about.\n",
			float64(api)/float64(warm), overhead, ms(inner), ms(bash), float64(start)/float64(run), ms(native), ms(warm))
	}
	if gobench != "" {
		b.WriteString("\n## Go benchmarks\n\n`go test -run '^$' -bench . -benchmem -benchtime 2s` on the policy, audit, agent, batch, netproxy, sandbox/executor, sandbox/kubernetes and workspace packages (BenchmarkExecTraceOverhead: the same call traced, judged, identified by content against a manifest and checked against the prediction, against untraced, on the host; BenchmarkBatch against BenchmarkBatchCapped: tasks/min at concurrency 1, 2 and 4 without and under the host-wide sandbox cap (default: the number of CPUs); BenchmarkSessionStart, BenchmarkWarmExec and BenchmarkBatchBackends: Docker and the local Kubernetes cluster side by side, the Kubernetes rows skipped without a cluster; BenchmarkHTTPSDownload100MB: direct, through a plain tunnel and through the intercepting proxy, cpu-ms/op the CPU time of server, proxy and client together; BenchmarkScrubCopy100MB: a response body copied directly and through the secret scrubber, for zeros, random bytes and JSON text) (ns/op is per operation named in the benchmark).\n\n```\n")
		b.WriteString(gobench)
		b.WriteString("\n```\n")
		if sum := interceptSummary(gobench); sum != "" {
			b.WriteString("\n" + sum)
		}
	}
	return b.String()
}

// oneLineErr is an error's text on one line (a table cell).
func oneLineErr(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
