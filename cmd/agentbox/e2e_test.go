package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// cli runs the real built binary.
type result struct {
	code           int
	stdout, stderr string
	pid            int
}

func agentbox(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return abCmd{env: env}.run(t, args...)
}

// abCmd runs the real binary with a working directory, stdin (nil is
// /dev/null, not a terminal) and environment of the test's choosing: env is
// added to a fresh baseEnv, or fullEnv replaces it (state shared by runs).
type abCmd struct {
	dir     string
	env     []string
	fullEnv []string
	stdin   io.Reader
}

func (o abCmd) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
	cmd.Dir = o.dir
	cmd.Env = o.fullEnv
	if cmd.Env == nil {
		cmd.Env = append(baseEnv(t), o.env...)
	}
	cmd.Stdin = o.stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running agentbox: %v", err)
	}
	return result{code, out.String(), errb.String(), cmd.Process.Pid}
}

func baseEnv(t *testing.T) []string {
	state := t.TempDir()
	// Each test has its own sandbox slots (AGENTBOX_RUNTIME_DIR): its
	// processes share the host-wide cap among themselves, never with the
	// packages go test runs beside it, so no test waits on another's slot
	// or prints that it does.
	env := []string{"HOME=" + state, "XDG_STATE_HOME=" + filepath.Join(state, "state"), "PATH=" + os.Getenv("PATH"), "NO_COLOR=1", testutil.ManifestEnv(),
		"AGENTBOX_RUNTIME_DIR=" + filepath.Join(state, "run")}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	// A session killed in the test (SIGKILL) leaves its disk image and
	// overlay mounted, as it would for a user: gc with the same state
	// must release them before the directory is removed.
	t.Cleanup(func() {
		if len(mountsBelow(state)) == 0 {
			return
		}
		abCmd{fullEnv: env}.run(t, "gc")
		if left := mountsBelow(state); len(left) > 0 {
			t.Errorf("gc left mounts of killed sessions: %q", left)
		}
	})
	return env
}

// mountsBelow lists the mount points at or below dir.
func mountsBelow(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// inSandbox reports whether the sandbox has made name in the workspace ws,
// for tests that wait for a command to be running: rw stages, so a file
// written mid-call is in the session's upper layer (under the
// XDG_STATE_HOME of env) until the call ends, and in ws after.
func inSandbox(env []string, ws, name string) bool {
	if _, err := os.Stat(filepath.Join(ws, name)); err == nil {
		return true
	}
	return len(stagedPaths(env, name)) > 0
}

// stagedPaths are the places name has in the upper layers of the sessions
// under env's XDG_STATE_HOME: the upper sits in the session's directory, or
// on its size-bounded disk image (disk/upper) when one is mounted.
func stagedPaths(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if state, ok := strings.CutPrefix(e, "XDG_STATE_HOME="); ok {
			for _, pat := range []string{"upper", filepath.Join("disk", "upper")} {
				m, _ := filepath.Glob(filepath.Join(state, "agentbox", "work", "*", pat, name))
				out = append(out, m...)
			}
		}
	}
	return out
}

func TestExecEndToEnd(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	r := agentbox(t, nil, "exec", "--workspace", ws, "--", `python3 -c "print(6*7)"`)
	if r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("exec: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = agentbox(t, nil, "exec", "--workspace", ws, "--", "echo hi > f.txt; exit 5")
	if r.code != 5 {
		t.Errorf("exit code not passed through: %d (%s)", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "hi\n" {
		t.Errorf("file not written to the workspace: %q", b)
	}
	r = agentbox(t, nil, "exec", "--workspace", ws, "--json", "--", "echo out; echo err >&2")
	var j struct {
		ExitCode    int    `json:"exit_code"`
		TimedOut    bool   `json:"timed_out"`
		Output      string `json:"output"`
		OutputBytes int64  `json:"output_bytes"`
		Truncated   bool   `json:"truncated"`
		DurationMS  *int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 0 {
		t.Fatalf("--json: %v %q %s", err, r.stdout, r.stderr)
	}
	if j.Output != "out\nerr\n" || j.OutputBytes != 8 || j.DurationMS == nil {
		t.Errorf("--json fields: %+v", j)
	}
}

func TestExecTimeoutKillsEverything(t *testing.T) {
	cli := testutil.RequireDocker(t)
	r := agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--timeout", "2s", "--", "sleep 300 & setsid sleep 300; sleep 300")
	if r.code != 124 || !strings.Contains(r.stderr, "timed out") {
		t.Fatalf("want 124 and a message, got %d %q", r.code, r.stderr)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container left: %v", left)
	}
}

func TestExecErrors(t *testing.T) {
	testutil.RequireDocker(t)
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, []string{"exec", "--"}, 2, "needs a command"},
		{"bad flag", nil, []string{"exec", "--no-such-flag", "--", "true"}, 2, "no-such-flag"},
		{"missing workspace", nil, []string{"exec", "--workspace", "/nonexistent/ws", "--", "true"}, 2, "does not exist"},
		{"file workspace", nil, []string{"exec", "--workspace", "/etc/hostname", "--", "true"}, 2, "not a directory"},
		{"bad network", nil, []string{"exec", "--network", "wide", "--", "true"}, 2, "none, proxy or open"},
		{"no engine", []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, []string{"exec", "--", "true"}, 125, "DOCKER_HOST"},
		{"missing image", nil, []string{"exec", "--image", "agentbox/nope:latest", "--", "true"}, 125, "agentbox image build"},
		{"dynamic executor", []string{"AGENTBOX_EXECUTOR=/bin/ls"}, []string{"exec", "--", "true"}, 125, "CGO_ENABLED=0"},
		{"unknown command", nil, []string{"frobnicate"}, 2, "frobnicate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args[0] == "exec" && !contains(args, "--workspace") {
				args = append([]string{"exec", "--workspace", t.TempDir()}, args[1:]...)
			}
			r := agentbox(t, c.env, args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("want exit %d with %q, got %d: %q", c.code, c.msg, r.code, r.stderr)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 2 {
				t.Errorf("error is %d lines, want one or two: %q", n+1, r.stderr)
			}
		})
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// startBackground starts agentbox exec with a long command and waits until
// its container is running a command.
func startBackground(t *testing.T, marker string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command(testutil.Binary(t), "exec", "--workspace", ws, "--", "touch started; sleep 300")
	cmd.Env = baseEnv(t)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.Eventually(t, 60*time.Second, "the command to start in the sandbox", func() bool {
		return inSandbox(cmd.Env, ws, "started")
	})
	return cmd, &errb
}

func TestSIGINTRemovesContainer(t *testing.T) {
	cli := testutil.RequireDocker(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		cmd, errb := startBackground(t, sig.String())
		pid := cmd.Process.Pid
		owner := ownerOf(t, cli, pid)
		if owner == "" {
			t.Fatalf("no container owned by pid %d", pid)
		}
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 128+int(sig) {
			t.Fatalf("%v: want exit %d, got %v (%s)", sig, 128+int(sig), err, errb.String())
		}
		if owned := ownerOf(t, cli, pid); owned != "" {
			t.Errorf("%v: container %s left behind", sig, owned)
		}
	}
}

func TestSIGKILLThenGC(t *testing.T) {
	cli := testutil.RequireDocker(t)
	// A live sandbox of this test process must survive gc.
	live := testutil.StartSession(t, "")
	cmd, _ := startBackground(t, "kill")
	pid := cmd.Process.Pid
	orphan := ownerOf(t, cli, pid)
	if orphan == "" {
		t.Fatal("no container for the agentbox process")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// Another test's agentbox may collect the orphan first (every exec
	// starts with a gc), so gc must succeed and the orphan must be gone,
	// whoever removed it.
	r := agentbox(t, nil, "gc")
	if r.code != 0 {
		t.Fatalf("gc: %d %q %q", r.code, r.stdout, r.stderr)
	}
	testutil.Eventually(t, 30*time.Second, "the orphan's removal", func() bool { return ownerOf(t, cli, pid) == "" })
	if len(testutil.Leftovers(t, cli, live.ID())) != 1 {
		t.Errorf("gc removed a live process's sandbox")
	}
	if res := execOK(t, live); res != "ok\n" {
		t.Errorf("live sandbox broken after gc: %q", res)
	}
}

func execOK(t *testing.T, s sandbox.Session) string {
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "echo ok", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Output)
}

func ownerOf(t *testing.T, cli interface {
	docker.Engine
}, pid int) string {
	t.Helper()
	ids, err := testutil.OwnedBy(context.Background(), cli, pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

func TestDoctorAndVersion(t *testing.T) {
	testutil.RequireDocker(t)
	r := agentbox(t, nil, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "all good") {
		t.Fatalf("doctor: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// README: rw is disk-bounded when the policy sets sandbox.limits.disk.
	if !strings.Contains(r.stdout, "rw mode: bounded the same way only when the policy sets sandbox.limits.disk") || strings.Contains(r.stdout, "cannot bound") {
		t.Errorf("doctor's rw disk note disagrees with README:\n%s", r.stdout)
	}
	r = agentbox(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "doctor")
	if r.code != 125 || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "DOCKER_HOST") {
		t.Fatalf("doctor without engine: %d %q", r.code, r.stdout)
	}
	r = agentbox(t, nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agentbox ") {
		t.Fatalf("version: %q", r.stdout)
	}
}
