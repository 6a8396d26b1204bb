package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/workspace"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// writeFiles is the write-heavy call (issue 37): 10,000 files of 1 KiB in
// 100 new directories below /workspace/DIR, written by bash builtins (one
// open, write and close each; no process per file).
func writeFiles(dir string) string {
	return `cd /workspace && mkdir ` + dir + ` && cd ` + dir + ` && mkdir $(seq -f d%g 0 99) && i=0 && ` +
		`while [ $i -lt 10000 ]; do printf '%1024s' '' > d$((i % 100))/f$i; i=$((i + 1)); done`
}

const writeRounds = 3

// onlyWrites measures the write-heavy call rows alone and prints them
// (benchreport -only writes).
func onlyWrites() error {
	rows, err := writeRows(context.Background(), os.Getenv("AGENTBOX_BIN"))
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %s | %s |\n", r.name, r.n, ms(r.median), ms(r.p90), r.note)
	}
	return err
}

// writeRows measures what a call writing 10,000 files of 1 KiB costs in a
// staged rw session (the real binary: the call, its promotion and its
// audit record) against the same call in a container with the workspace
// bind-mounted (docker run -v, then the Docker exec API), each as the
// time the writes add over a no-write call (`true`) of the same session
// or container. Rounds alternate between the two, each a fresh session
// and container; the medians of the rounds are compared (target: at most
// 1.5×). Twice: on the temporary directory's filesystem, and on a fresh
// ext4 with a journal (scratchFS; skipped where it cannot be mounted).
func writeRows(ctx context.Context, exe string) ([]row, error) {
	if exe == "" {
		return nil, fmt.Errorf("the write rows run the real binary: set AGENTBOX_BIN")
	}
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	tmp, err := os.MkdirTemp("", "agentbox-bench-writes-")
	if err != nil {
		return nil, err
	}
	defer workspace.RemoveTree(tmp)
	root := filepath.Join(tmp, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, err
	}
	rows, err := writeRowsIn(ctx, exe, cli, root, "on the temporary directory's filesystem")
	if err != nil {
		return nil, err
	}
	mnt, undo, err := scratchFS(ctx, tmp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "write rows on a journalled ext4 skipped: %v\n", err)
		return rows, nil
	}
	defer undo()
	more, err := writeRowsIn(ctx, exe, cli, mnt, "on a fresh ext4 with a journal (a loop device), workspace and staging layer alike")
	return append(rows, more...), err
}

// writeRowsIn measures the write rows with everything in tmp.
func writeRowsIn(ctx context.Context, exe string, cli *client.Client, tmp, fsNote string) ([]row, error) {
	stagedWS, bindWS := filepath.Join(tmp, "staged"), filepath.Join(tmp, "bind")
	pol := filepath.Join(tmp, "policy.yaml")
	for _, d := range []string{stagedWS, bindWS} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\ncommands: {default: allow, dynamic: allow}\n"), 0o644); err != nil {
		return nil, err
	}
	var sw, st, sr, sh, bw, bt []time.Duration
	for i := range writeRounds {
		dir := fmt.Sprintf("r%d", i)
		fmt.Fprintf(os.Stderr, "measuring a call writing 10,000 files, staged rw session, round %d/%d\n", i+1, writeRounds)
		w, t, r, h, err := stagedWrites(ctx, exe, tmp, stagedWS, pol, dir, i)
		if err != nil {
			return nil, fmt.Errorf("staged session: %w", err)
		}
		sw, st, sr, sh = append(sw, w), append(st, t), append(sr, r), append(sh, h)
		fmt.Fprintf(os.Stderr, "measuring a call writing 10,000 files, docker run -v, round %d/%d\n", i+1, writeRounds)
		if w, t, err = bindWrites(ctx, cli, bindWS, dir); err != nil {
			return nil, fmt.Errorf("bind mount: %w", err)
		}
		bw, bt = append(bw, w), append(bt, t)
	}
	med := func(d []time.Duration) time.Duration { d = slices.Clone(d); slices.Sort(d); return d[len(d)/2] }
	top := func(d []time.Duration) time.Duration { return slices.Max(d) }
	staged, bind, host := med(sw)-med(st), med(bw)-med(bt), med(sh)-med(st)
	ratio := float64(staged) / float64(max(bind, 1))
	return []row{
		{"call writing 10,000 files of 1 KiB, staged rw session (`agentbox run`, the model thinking 1 s before each reply: the call, its decisions, its promotion finishing while the model thinks), " + fsNote, writeRounds, med(sw), top(sw),
			fmt.Sprintf("a `true` call in the same session: %s; the writes add **%s** to what the agent waits, **%.2f×** what they add with a bind mount (target: ≤ 1.5); the command itself ran %s in the sandbox; the workspace had every file %s after the call began (**%.2f×** the bind mount's writes: the copies, done while the model thought)", ms(med(st)), ms(staged), ratio, ms(med(sr)), ms(host), float64(host)/float64(max(bind, 1)))},
		{"the same call, workspace bind-mounted (`docker run -v`, then the Docker exec API), " + fsNote + " (baseline)", writeRounds, med(bw), top(bw),
			fmt.Sprintf("a `true` call in the same container: %s; the writes add **%s**", ms(med(bt)), ms(bind))},
	}, nil
}

// stagedWrites runs a scripted session (true, true, the writes into dir,
// true) in a staged rw workspace and returns the costs of the writing
// call and of the second true call, from the audit log: each call's
// decision record to the next one's (the scripted model answers at once).
func stagedWrites(ctx context.Context, exe, tmp, ws, pol, dir string, round int) (write, noWrite, ran, host time.Duration, err error) {
	script := filepath.Join(tmp, fmt.Sprintf("writes%d.yaml", round))
	log := filepath.Join(tmp, fmt.Sprintf("audit%d.jsonl", round))
	call := func(cmd string) string {
		b, _ := json.Marshal(cmd)
		return fmt.Sprintf("  - think: %s\n    tool_calls:\n      - {name: execute_bash, args: {command: %s}}\n", think, b)
	}
	body := "turns:\n" + call("true") + call("true") + call(writeFiles(dir)) + call("true") + "  - content: done\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		return 0, 0, 0, 0, err
	}
	cmd := exec.CommandContext(ctx, exe, "run", "-q", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "rw",
		"--audit", log, "--script", script, "write files")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "state"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("%v: %s", err, out)
	}
	starts, durs, err := callStarts(log)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if len(starts) != 4 || len(durs) != 4 {
		return 0, 0, 0, 0, fmt.Errorf("%s: %d calls (%d results), want 4", log, len(starts), len(durs))
	}
	if _, err := os.Stat(filepath.Join(ws, dir, "d99", "f9999")); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("the writes did not reach the workspace: %w", err)
	}
	// The write call is the session's first checkpoint: its record is
	// written once every file is in the workspace.
	var cps []string
	err = filepath.WalkDir(filepath.Join(tmp, "state"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "1.json" && filepath.Base(filepath.Dir(p)) == "calls" {
			cps = append(cps, p)
		}
		return err
	})
	if err != nil || len(cps) != 1 {
		return 0, 0, 0, 0, fmt.Errorf("the write call's checkpoint record: %d found (%v)", len(cps), err)
	}
	fi, err := os.Stat(cps[0])
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if err := os.Remove(cps[0]); err != nil { // the next round's is its own
		return 0, 0, 0, 0, err
	}
	return starts[3].Sub(starts[2]) - think, starts[2].Sub(starts[1]) - think, durs[2], fi.ModTime().Sub(starts[2]), nil
}

// think is how long the scripted model thinks before each reply, as a
// real model does (seconds at least): a bulk call's promotion goes on
// meanwhile. Each call's cost is measured without it.
const think = time.Second

// callStarts is the time of each tool call's decision record, in order,
// and the command's own duration in the sandbox (its result record's).
func callStarts(log string) ([]time.Time, []time.Duration, error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var out []time.Time
	var ran []time.Duration
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r struct {
			Time       time.Time `json:"time"`
			Event      string    `json:"event"`
			CallID     string    `json:"call_id"`
			Phase      string    `json:"phase"`
			DurationMS *int64    `json:"duration_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", log, err)
		}
		if r.Event != audit.EventToolCall {
			continue
		}
		if !seen[r.CallID] {
			seen[r.CallID] = true
			out = append(out, r.Time)
		}
		if r.Phase == audit.PhaseResult && r.DurationMS != nil {
			ran = append(ran, time.Duration(*r.DurationMS)*time.Millisecond)
		}
	}
	return out, ran, sc.Err()
}

// bindWrites starts a container with ws bind-mounted (docker run -v),
// runs true, true, the writes into dir, through the Docker exec API, and
// returns the costs of the writing call and the second true call.
func bindWrites(ctx context.Context, cli *client.Client, ws, dir string) (write, noWrite time.Duration, err error) {
	out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--rm", "--network", "none", "-v", ws+":/workspace", "-w", "/workspace",
		image, "sleep", "infinity").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("docker run: %w", err)
	}
	cid := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", cid).Run()
	var d [3]time.Duration
	for i, c := range []string{"true", "true", writeFiles(dir)} {
		t0 := time.Now()
		if err := dockerExecCmd(ctx, cli, cid, []string{"bash", "--noprofile", "--norc", "-c", c}); err != nil {
			return 0, 0, err
		}
		d[i] = time.Since(t0)
	}
	if _, err := os.Stat(filepath.Join(ws, dir, "d99", "f9999")); err != nil {
		return 0, 0, fmt.Errorf("the writes did not reach the workspace: %w", err)
	}
	return d[2], d[1], nil
}

// dockerExecCmd runs cmd in the container through the Docker exec API and
// waits for it.
func dockerExecCmd(ctx context.Context, cli *client.Client, cid string, cmd []string) error {
	ex, err := cli.ContainerExecCreate(ctx, cid, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true, WorkingDir: "/workspace"})
	if err != nil {
		return err
	}
	hj, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	var buf strings.Builder
	_, _ = bufio.NewReader(hj.Reader).WriteTo(&buf)
	hj.Close()
	ins, err := cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return err
	}
	if ins.ExitCode != 0 {
		return fmt.Errorf("%q: exit %d: %s", strings.Join(cmd, " "), ins.ExitCode, buf.String())
	}
	return nil
}
