package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
)

// poolBench shapes the Kubernetes warm pool measurement (agent-sandbox's
// shape: Poisson arrivals at a rate, and a burst).
type poolBench struct {
	size   int     // idle pods the keeper keeps
	rate   float64 // claims per second (Poisson)
	claims int     // Poisson claims measured in all (in rounds of at most size)
	burst  int     // claims at once
	cold   int     // cold starts measured
	execs  int     // one-shot `agentbox exec -- true` per backend
}

// kubeconfig is the cluster to measure on: $KUBECONFIG, else the local
// test cluster's; "" = none (the pool rows are skipped).
func kubeconfig() string {
	for _, p := range []string{os.Getenv("KUBECONFIG"), filepath.Join(".k8s", "kubeconfig")} {
		if fi, err := os.Stat(p); p != "" && err == nil && fi.Mode().IsRegular() {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

// poolRows measures, on the Kubernetes cluster: claim → first answer (a
// session started on a pod claimed from a warm pool, then `true`) under
// Poisson arrivals and under a burst, beside cold starts; and a one-shot
// `agentbox exec -- true` with a warm pool against the same on Docker.
func poolRows(ctx context.Context, pb poolBench, exe string) ([]row, error) {
	kc := kubeconfig()
	if kc == "" {
		fmt.Fprintln(os.Stderr, "pool rows skipped: no Kubernetes cluster (make k8s-up)")
		return nil, nil
	}
	os.Setenv("KUBECONFIG", kc)
	keeper, err := kubernetes.Connect(ctx, kubernetes.Options{UsePool: true, Pool: pb.size})
	if err != nil {
		return nil, err
	}
	defer keeper.Close(ctx)
	var warm atomic.Int64
	claimer, err := kubernetes.Connect(ctx, kubernetes.Options{UsePool: true, Notice: func(l string) {
		if strings.Contains(l, kubernetes.StartWarm) {
			warm.Add(1)
		}
	}})
	if err != nil {
		return nil, err
	}
	defer claimer.Close(ctx)
	cold, err := kubernetes.Connect(ctx, kubernetes.Options{})
	if err != nil {
		return nil, err
	}
	defer cold.Close(ctx)
	ws, _ := os.MkdirTemp("", "agentbox-poolbench-")
	defer os.RemoveAll(ws)
	cfg := sandbox.Config{Workspace: ws, WorkspaceCopy: true, CPUs: 0.25, MemoryBytes: 256 << 20}
	fill := func() error {
		keeper.Warm(ctx, cfg)
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			if n, err := keeper.PoolIdle(ctx, cfg); err != nil || n >= pb.size {
				return err
			}
			time.Sleep(250 * time.Millisecond)
		}
		return fmt.Errorf("the pool did not reach %d idle pods in 5 minutes", pb.size)
	}
	// one session: start, `true`, the time to that answer; closed apart,
	// at once, or with the round (held: sessions that outlive the round,
	// as an agent's do, so that no pod is torn down beside the claims).
	var closing sync.WaitGroup
	var heldMu sync.Mutex
	var held []sandbox.Session
	hold := false
	one := func(rt *kubernetes.Runtime) (time.Duration, error) {
		t0 := time.Now()
		s, err := rt.Start(ctx, cfg)
		if err != nil {
			return 0, err
		}
		_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 30 * time.Second})
		d := time.Since(t0)
		heldMu.Lock()
		if hold {
			held = append(held, s)
		} else {
			closing.Go(func() { _ = s.Close(ctx) })
		}
		heldMu.Unlock()
		return d, err
	}
	closeHeld := func() {
		heldMu.Lock()
		for _, s := range held {
			closing.Go(func() { _ = s.Close(ctx) })
		}
		held = nil
		heldMu.Unlock()
		closing.Wait()
	}
	var rows []row
	addDist := func(name string, ds []time.Duration, note string) {
		slices.Sort(ds)
		q := func(f float64) time.Duration { return ds[min(len(ds)-1, int(f*float64(len(ds))))] }
		rows = append(rows, row{name, len(ds), q(0.5), q(0.9), fmt.Sprintf("p99 %s; %s", ms(q(0.99)), note)})
	}
	concurrent := func(arrivals []time.Duration) ([]time.Duration, error) {
		warm.Store(0)
		var mu sync.Mutex
		var ds []time.Duration
		var errs []error
		var wg sync.WaitGroup
		t0 := time.Now()
		for _, at := range arrivals {
			time.Sleep(time.Until(t0.Add(at)))
			wg.Go(func() {
				d, err := one(claimer)
				mu.Lock()
				defer mu.Unlock()
				ds, errs = append(ds, d), append(errs, err)
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return ds, nil
	}

	if err := fill(); err != nil {
		return nil, err
	}
	// Claims arrive at the rate while the pool has pods for them: in
	// rounds of at most the pool's size, each from a full pool. (At 10/s
	// an unbroken stream drains any pool the 2-core node fits in under a
	// second, and what follows measures the node starting cold pods, not
	// the pool.) Twice: sessions closed as soon as they answered (their
	// pods torn down beside the next claims), and held until the round
	// ends.
	for _, h := range []bool{false, true} {
		hold = h
		fmt.Fprintf(os.Stderr, "measuring pool claims: %d Poisson arrivals at %.0f/s, in rounds of %d (sessions held: %v)\n", pb.claims, pb.rate, pb.size, h)
		var ds []time.Duration
		var warmN int64
		for len(ds) < pb.claims {
			if err := fill(); err != nil {
				return nil, err
			}
			var arrivals []time.Duration
			at := time.Duration(0)
			for range min(pb.size, pb.claims-len(ds)) {
				at += time.Duration(rand.ExpFloat64() / pb.rate * float64(time.Second))
				arrivals = append(arrivals, at)
			}
			rd, err := concurrent(arrivals)
			if err != nil {
				return nil, fmt.Errorf("poisson claims: %w", err)
			}
			warmN += warm.Load()
			ds = append(ds, rd...)
			closeHeld()
		}
		name, note := "each session closed once it answered", ""
		if h {
			name, note = "sessions held until the round ends", " (no pod torn down beside the claims)"
		}
		addDist(fmt.Sprintf("Kubernetes warm pool: claim → first answer, Poisson %.0f claims/s, %s", pb.rate, name), ds,
			fmt.Sprintf("%d of %d warm (the rest cold: pool empty), in rounds of at most %d from a full pool of %d%s", warmN, len(ds), pb.size, pb.size, note))
	}
	hold = false
	closing.Wait()
	if err := fill(); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "measuring pool claims: a burst of %d\n", pb.burst)
	ds, err := concurrent(make([]time.Duration, pb.burst))
	if err != nil {
		return nil, fmt.Errorf("burst claims: %w", err)
	}
	addDist(fmt.Sprintf("Kubernetes warm pool: claim → first answer, burst of %d", pb.burst), ds,
		fmt.Sprintf("%d of %d warm, pool of %d", warm.Load(), len(ds), pb.size))
	closing.Wait()
	var cds []time.Duration
	fmt.Fprintf(os.Stderr, "measuring cold starts (n=%d)\n", pb.cold)
	for range pb.cold {
		d, err := one(cold)
		if err != nil {
			return nil, fmt.Errorf("cold start: %w", err)
		}
		cds = append(cds, d)
		closing.Wait()
	}
	addDist("Kubernetes cold start → first answer (no pool)", cds, "pod create, Running, attach, hello, `true`, one at a time")
	if exe != "" && pb.execs > 0 {
		// The bench's own pool makes room on the node for the keeper's.
		keeper.Close(ctx)
		er, err := oneShotRows(ctx, pb, exe, kc, cold)
		if err != nil {
			return nil, err
		}
		rows = append(rows, er...)
	}
	return rows, nil
}

// oneShotRows time a whole `agentbox exec -- true` process on Kubernetes
// claiming from the warm pool another agentbox process keeps (a keeper
// `agentbox exec --pool 2 -- sleep`, the shape of the same policy), and on
// local Docker, alternately in the same run. Both run the built-in
// default policy with half a CPU per sandbox (a file layered on the
// default), which the 2-core test node can schedule for the keeper's
// session and its idle pods. Before each Kubernetes exec the keeper's
// pool has an idle pod again (its refill after the previous claim is not
// what is measured); the row says how many claims were warm.
func oneShotRows(ctx context.Context, pb poolBench, exe, kc string, rt *kubernetes.Runtime) ([]row, error) {
	dir, _ := os.MkdirTemp("", "agentbox-oneshot-")
	defer os.RemoveAll(dir)
	state, _ := os.MkdirTemp("", "agentbox-oneshot-state-")
	defer os.RemoveAll(state)
	pol := filepath.Join(state, "half-cpu.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nsandbox:\n  limits: {cpus: 0.5}\n"), 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "KUBECONFIG="+kc, "XDG_STATE_HOME="+state, "AGENTBOX_AUDIT="+filepath.Join(state, "audit.jsonl"))
	run := func(args ...string) (time.Duration, string, error) {
		cmd := exec.CommandContext(ctx, exe, append([]string{"exec", "--policy", pol}, args...)...)
		cmd.Dir, cmd.Env = dir, env
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		if err != nil {
			return 0, "", fmt.Errorf("agentbox exec %v: %w: %s", args, err, out)
		}
		return d, string(out), nil
	}
	keeper := exec.CommandContext(ctx, exe, "exec", "--policy", pol, "--backend", "kubernetes", "--pool", "2", "--timeout", "10m", "--", "sleep 540")
	keeper.Dir, keeper.Env = dir, env
	if err := keeper.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = keeper.Process.Signal(syscall.SIGINT)
		_ = keeper.Wait()
	}()
	idle := func() error {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if n, err := rt.IdlePods(ctx); err != nil || n >= 1 {
				return err
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("the keeper's pool had no idle pod within 3 minutes")
	}
	var k8s, dock []time.Duration
	warm := 0
	fmt.Fprintf(os.Stderr, "measuring one-shot agentbox exec -- true (n=%d per backend)\n", pb.execs)
	for range pb.execs {
		if err := idle(); err != nil {
			return nil, err
		}
		d, out, err := run("--backend", "kubernetes", "--pool", "0", "--", "true")
		if err != nil {
			return nil, err
		}
		if strings.Contains(out, kubernetes.StartWarm) {
			warm++
		}
		k8s = append(k8s, d)
		if d, _, err = run("--", "true"); err != nil {
			return nil, err
		}
		dock = append(dock, d)
	}
	med := func(ds []time.Duration) (time.Duration, time.Duration) {
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)*9/10]
	}
	km, k9 := med(k8s)
	dm, d9 := med(dock)
	return []row{
		{"one-shot `agentbox exec -- true`, Kubernetes, warm pool (`--pool 0`: claims from another process's pool)", len(k8s), km, k9, fmt.Sprintf("whole process, default policy + `limits: {cpus: 0.5}`; %d of %d warm", warm, len(k8s))},
		{"one-shot `agentbox exec -- true`, local Docker (same run)", len(dock), dm, d9, "whole process, default policy + `limits: {cpus: 0.5}`"},
	}, nil
}

// poolCfg is the pool measurement's shape (flags).
var poolCfg poolBench

// onlyPool is `benchreport -only pool`: the pool rows, printed.
func onlyPool() error {
	rows, err := poolRows(context.Background(), poolCfg, os.Getenv("AGENTBOX_BIN"))
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %s | %s |\n", r.name, r.n, ms(r.median), ms(r.p90), r.note)
	}
	return err
}
