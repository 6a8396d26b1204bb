package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/workspace"
)

// sixScript is the scripted two-call session of issue 12: an edit, an
// append, a deletion, an addition, a mode change, a rewrite (write_file).
const sixScript = `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "sed -i s/edit/EDITED/ edit.txt && echo appended >> src/append.txt && rm src/gone.txt && echo new > src/new.txt && chmod 755 run.sh"}}
  - tool_calls:
      - {name: write_file, args: {path: rewrite.txt, content: "rewritten\n"}}
  - content: done
`

// onlyWorkspaces measures the workspace-size rows alone and prints them
// as the report's table rows (benchreport -only workspaces).
func onlyWorkspaces() error {
	ctx := context.Background()
	rt, err := docker.Connect(ctx)
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	rows, err := workspaceRows(ctx, rt, os.Getenv("AGENTBOX_BIN"))
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %s | %s |\n", r.name, r.n, ms(r.median), ms(r.p90), r.note)
	}
	return err
}

// workspaceRows measures the same scripted run on a 10-file and a
// 60,000-file workspace, in rw mode and in copy mode with --apply, and the
// start of a batch task's sandbox (copy + container) on both.
func workspaceRows(ctx context.Context, rt *docker.Runtime, exe string) ([]row, error) {
	tmp, err := os.MkdirTemp("", "agentbox-bench-ws-")
	if err != nil {
		return nil, err
	}
	defer workspace.RemoveTree(tmp)
	script, pol := filepath.Join(tmp, "six.yaml"), filepath.Join(tmp, "policy.yaml")
	if err := os.WriteFile(script, []byte(sixScript), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\ncommands: {default: allow, dynamic: allow}\n"), 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "state"))
	sizes := []int{10, 60000}
	wss := map[int]string{}
	for _, n := range sizes {
		wss[n] = filepath.Join(tmp, fmt.Sprintf("ws%d", n))
		if err := generate(wss[n], n); err != nil {
			return nil, err
		}
	}
	const runs = 5
	var rows []row
	for _, mode := range [][]string{{"rw"}, {"copy", "--apply"}} {
		var base time.Duration
		for _, n := range sizes {
			ws := wss[n]
			name := fmt.Sprintf("scripted 2-call run, %s mode, %d files", mode[0], n)
			if len(mode) > 1 {
				name = fmt.Sprintf("scripted 2-call run, copy mode + apply, %d files", n)
			}
			fmt.Fprintf(os.Stderr, "measuring %s (n=%d)\n", name, runs)
			med, p90, err := measure(runs, func() error {
				if err := sixBase(ws); err != nil {
					return err
				}
				args := append([]string{"run", "-q", "--no-memory", "--policy", pol, "--workspace", ws, "--script", script, "--workspace-mode"}, mode...)
				cmd := exec.CommandContext(ctx, exe, append(args, "six changes")...)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("%v: %s", err, out)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			note := "the real binary, end to end (sandbox start included)"
			if n == sizes[0] {
				base = med
			} else {
				note = fmt.Sprintf("**%+.2f s** against %d files", (med - base).Seconds(), sizes[0])
			}
			rows = append(rows, row{name, runs, med, p90, note})
		}
	}
	for _, walk := range []bool{false, true} {
		br, err := batchStartRows(ctx, rt, exe, filepath.Join(tmp, "batch"), wss, sizes, runs, walk)
		if err != nil {
			return nil, err
		}
		rows = append(rows, br...)
	}
	return rows, nil
}

// generate writes n small files below dir, 500 per directory.
func generate(dir string, n int) error {
	for i := range n {
		d := filepath.Join(dir, "gen", fmt.Sprintf("d%03d", i/500))
		if i%500 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte("x\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sixBase (re)writes the files the script changes.
func sixBase(dir string) error {
	_ = os.Remove(filepath.Join(dir, "src", "new.txt"))
	for p, body := range map[string]string{"edit.txt": "edit\n", "src/append.txt": "line\n", "src/gone.txt": "gone\n",
		"run.sh": "#!/bin/sh\necho hi\n", "rewrite.txt": "old\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(dir, "run.sh"), 0o644)
}

// batchStartRows measures what a batch task pays before its first call:
// the overlay copy, the sandbox, `true` and the host's decision after it.
// walk measures the same with the in-sandbox effects walk instead of the
// host's decisions (copy mode before it staged), as the baseline.
func batchStartRows(ctx context.Context, rt *docker.Runtime, exe, dir string, wss map[int]string, sizes []int, runs int, walk bool) ([]row, error) {
	var rows []row
	var base time.Duration
	for _, n := range sizes {
		name := fmt.Sprintf("batch task start (overlay copy + sandbox + `true` + host decision), %d files", n)
		if walk {
			name = fmt.Sprintf("batch task start, in-sandbox effects walk instead (baseline: copy mode before host staging), %d files", n)
		}
		fmt.Fprintf(os.Stderr, "measuring %s (n=%d)\n", name, runs)
		store := workspace.Store{Dir: dir}
		med, p90, err := measure(runs, func() error {
			cfg := sandbox.Config{Image: image, ExecutorPath: exe, SessionID: sandbox.NewID()}
			cp, err := workspace.NewCopy(store, wss[n], workspace.CopyOptions{Session: cfg.SessionID, DiskBytes: 2 << 30})
			if err != nil {
				return err
			}
			defer cp.Remove()
			cp.Configure(&cfg)
			cfg.Overlay.Staged = !walk
			s, err := rt.Start(ctx, cfg)
			if err != nil {
				return err
			}
			_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
			if err == nil && !walk {
				// The host's decision after the call (copy mode stages).
				_, err = cp.AfterCall(ctx, "bench")
			}
			if cerr := s.Close(ctx); err == nil {
				err = cerr
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		note := "what every batch task pays before its first call"
		if n == sizes[0] {
			base = med
		} else {
			note = fmt.Sprintf("**%+.2f s** against %d files", (med - base).Seconds(), sizes[0])
		}
		rows = append(rows, row{name, runs, med, p90, note})
	}
	return rows, nil
}
