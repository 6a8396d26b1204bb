package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// enforceRows measures a warm call of `bash -c 'ls | wc -l'` with
// exec-time enforcement (the built-in default policy judged at every exec,
// the effects check after the call) against the same call in a session
// without it (traced, nothing judged, no effects check), interleaved so
// that both see the same machine load (issue 10: at most 1 ms more).
func enforceRows(ctx context.Context, rt sandbox.Runtime, cfg sandbox.Config, n int) ([]row, error) {
	ws, err := os.MkdirTemp("", "agentbox-bench-enforce-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte("x\n"), 0o644); err != nil {
			return nil, err
		}
	}
	cfg.Workspace = ws
	plain, err := rt.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer plain.Close(ctx)
	if cfg.Enforce, err = agent.Enforcement(policy.Default(), nil); err != nil {
		return nil, err
	}
	enforced, err := rt.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer enforced.Close(ctx)
	call := func(s sandbox.Session) (time.Duration, error) {
		t0 := time.Now()
		r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "ls | wc -l", Timeout: 10 * time.Second})
		if err == nil && (r.ExitCode != 0 || len(r.DeniedExecs) > 0) {
			err = fmt.Errorf("exit %d, denied %v", r.ExitCode, r.DeniedExecs)
		}
		return time.Since(t0), err
	}
	fmt.Fprintf(os.Stderr, "measuring exec-time enforcement (n=%d, interleaved)\n", n)
	var dp, de, diff []time.Duration
	for range n {
		p, err := call(plain)
		if err != nil {
			return nil, fmt.Errorf("warm call without enforcement: %w", err)
		}
		e, err := call(enforced)
		if err != nil {
			return nil, fmt.Errorf("warm call with enforcement: %w", err)
		}
		dp, de, diff = append(dp, p), append(de, e), append(diff, e-p)
	}
	mp, pp := quantiles(dp)
	me, pe := quantiles(de)
	md, pd := quantiles(diff)
	return []row{
		{"warm call `bash -c 'ls \\| wc -l'` without exec-time enforcement (baseline)", n, mp, pp, "traced, no policy judged, no effects check"},
		{"warm call `bash -c 'ls \\| wc -l'` with exec-time enforcement", n, me, pe, "default policy judged at every exec + effects check (interleaved with the baseline)"},
		{"added by exec-time enforcement (per-pair difference)", n, md, pd, "target: ≤ 1 ms"},
	}, nil
}

// quantiles returns the median and the 90th percentile of d.
func quantiles(d []time.Duration) (med, p90 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*9/10]
}
