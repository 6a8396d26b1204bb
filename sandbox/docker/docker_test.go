package docker_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

func startDocker(t *testing.T) (sandbox.Session, string) {
	ws := t.TempDir()
	cfg := testutil.Config(t, ws)
	cfg.MemoryBytes = 256 << 20
	cfg.Pids = 128
	return testutil.StartWith(t, cfg), ws
}

func TestDockerConformance(t *testing.T) {
	sandboxtest.Run(t, startDocker)
}

func TestHardeningFromInside(t *testing.T) {
	t.Setenv("AGENTBOX_TEST_HOST_SECRET", "host-secret-value")
	s, _ := startDocker(t)
	checks := map[string]string{
		"caps":       `grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status | awk '{print $2}' | sort -u`,
		"nnp":        `grep NoNewPrivs /proc/self/status | awk '{print $2}'`,
		"net":        `ls /sys/class/net`,
		"rootfs":     `touch /usr/x 2>/dev/null && echo writable || echo readonly`,
		"tmp":        `touch /tmp/x && echo tmp-ok`,
		"socket":     `ls /var/run/docker.sock /run/docker.sock 2>/dev/null | wc -l`,
		"env":        `env | grep -c AGENTBOX_TEST_HOST_SECRET || true`,
		"seccomp":    `grep Seccomp: /proc/self/status | awk '{print $2}'`,
		"mounts":     `awk '$2=="/workspace"||$2=="/.agentbox/agentbox"{print $2, substr($4,1,2)}' /proc/mounts | sort`,
		"executor":   `test -w /.agentbox/agentbox && echo writable || echo readonly`,
		"core-limit": `ulimit -c`,
	}
	want := map[string]string{
		"caps":       "0000000000000000",
		"nnp":        "1",
		"net":        "lo",
		"rootfs":     "readonly",
		"tmp":        "tmp-ok",
		"socket":     "0",
		"env":        "0",
		"seccomp":    "2",
		"mounts":     "/.agentbox/agentbox ro\n/workspace rw",
		"executor":   "readonly",
		"core-limit": "0",
	}
	for name, cmd := range checks {
		res := sandboxtest.Exec(t, s, cmd, 10*time.Second)
		if got := strings.TrimSpace(string(res.Output)); got != want[name] {
			t.Errorf("%s: got %q, want %q", name, got, want[name])
		}
	}
}

func TestHardeningFromInspect(t *testing.T) {
	cli := testutil.RequireDocker(t)
	s, ws := startDocker(t)
	ins, err := cli.ContainerInspect(context.Background(), s.Info().ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	hc := ins.HostConfig
	if string(hc.NetworkMode) != "none" || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || len(hc.CapAdd) != 0 {
		t.Errorf("network %q capdrop %v capadd %v", hc.NetworkMode, hc.CapDrop, hc.CapAdd)
	}
	if !hc.ReadonlyRootfs || hc.Privileged || hc.Init == nil || *hc.Init {
		t.Errorf("readonly=%v privileged=%v init=%v", hc.ReadonlyRootfs, hc.Privileged, hc.Init)
	}
	for _, o := range hc.SecurityOpt {
		if strings.Contains(o, "unconfined") {
			t.Errorf("security option %q", o)
		}
	}
	if len(hc.SecurityOpt) != 2 || hc.SecurityOpt[0] != "no-new-privileges" || !strings.HasPrefix(hc.SecurityOpt[1], "seccomp={") {
		t.Errorf("security options %.200v", hc.SecurityOpt)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != 128 || hc.Memory != 256<<20 || hc.MemorySwap != hc.Memory || hc.NanoCPUs <= 0 {
		t.Errorf("limits: pids %v memory %d swap %d cpus %d", hc.PidsLimit, hc.Memory, hc.MemorySwap, hc.NanoCPUs)
	}
	if len(hc.Devices) != 0 || len(hc.PortBindings) != 0 || hc.PidMode != "" || hc.IpcMode == "host" || hc.UTSMode != "" || hc.UsernsMode != "" {
		t.Errorf("devices %v ports %v pid %q ipc %q uts %q", hc.Devices, hc.PortBindings, hc.PidMode, hc.IpcMode, hc.UTSMode)
	}
	if len(ins.Mounts) != 2 {
		t.Errorf("want exactly 2 mounts, got %+v", ins.Mounts)
	}
	for _, m := range ins.Mounts {
		switch m.Destination {
		case "/workspace":
			if m.Source != ws || !m.RW {
				t.Errorf("workspace mount %+v", m)
			}
		case "/.agentbox/agentbox":
			if m.RW {
				t.Errorf("executor mounted writable")
			}
		default:
			t.Errorf("unexpected mount %+v", m)
		}
		if strings.Contains(m.Source, "docker.sock") {
			t.Errorf("docker socket mounted")
		}
	}
	if ins.Config.Labels[docker.LabelSession] != s.ID() || ins.Config.Labels[docker.LabelOwner] != docker.OwnerLabel() {
		t.Errorf("labels %v", ins.Config.Labels)
	}
	for _, e := range ins.Config.Env {
		if strings.HasPrefix(e, "OPENAI") || strings.HasPrefix(e, "DOCKER") {
			t.Errorf("host variable leaked: %s", e)
		}
	}
}

func TestReadOnlyWorkspace(t *testing.T) {
	ws := t.TempDir()
	cfg := testutil.Config(t, ws)
	cfg.WorkspaceMode = "ro"
	s := testutil.StartWith(t, cfg)
	res := sandboxtest.Exec(t, s, "echo x > f 2>&1; echo $?", 10*time.Second)
	if !strings.HasSuffix(strings.TrimSpace(string(res.Output)), "1") {
		t.Errorf("wrote to a read-only workspace: %q", res.Output)
	}
	if _, err := os.Stat(ws + "/f"); err == nil {
		t.Errorf("file appeared in a read-only workspace")
	}
}

func TestCloseRemovesContainer(t *testing.T) {
	cli := testutil.RequireDocker(t)
	rt := testutil.Runtime(t)
	s, err := rt.Start(context.Background(), testutil.Config(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if ids := testutil.Leftovers(t, cli, s.ID()); len(ids) != 1 {
		t.Fatalf("want 1 container while open, got %d", len(ids))
	}
	sandboxtest.Exec(t, s, "exit 7", 10*time.Second)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if ids := testutil.Leftovers(t, cli, s.ID()); len(ids) != 0 {
		t.Fatalf("container left after close: %v", ids)
	}
	if _, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err == nil {
		t.Fatalf("exec after close succeeded")
	}
}

// The executor is PID 1: a command cannot kill it. Its death (here:
// killed from the host) fails closed: the call errors with ErrExecutor and
// the container is gone.
func TestExecutorDeathFailsClosed(t *testing.T) {
	cli := testutil.RequireDocker(t)
	s, _ := startDocker(t)
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "kill -9 $PPID; kill -9 1; echo alive", Timeout: 30 * time.Second})
	if err != nil || !strings.Contains(string(res.Output), "alive") {
		t.Fatalf("a command killed the executor: %v %q", err, res.Output)
	}
	if err := cli.ContainerKill(context.Background(), s.Info().ContainerID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Exec(context.Background(), sandbox.ExecRequest{Command: "true", Timeout: 30 * time.Second})
	if !errors.Is(err, sandbox.ErrExecutor) {
		t.Fatalf("want ErrExecutor, got %v", err)
	}
	testutil.Eventually(t, 30*time.Second, "container removal", func() bool { return len(testutil.Leftovers(t, cli, s.ID())) == 0 })
	if _, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); !errors.Is(err, sandbox.ErrExecutor) {
		t.Fatalf("broken session answered: %v", err)
	}
}

// Frames written to the container's stdout by anything but the executor
// (here: via init's stdout) are rejected and fail the session closed.
func TestForgedFramesRejected(t *testing.T) {
	s, _ := startDocker(t)
	_, err := s.Exec(context.Background(), sandbox.ExecRequest{
		Command: `printf '\x00\x00\x00\x30%s' "$(head -c 48 /dev/zero | tr '\0' a)" > /proc/1/fd/1 2>/dev/null && echo wrote; sleep 2; echo done`,
		Timeout: 20 * time.Second})
	if err == nil {
		t.Skip("the container's init stdout is not writable here; nothing to forge")
	}
	if !errors.Is(err, sandbox.ErrExecutor) {
		t.Fatalf("want ErrExecutor for a forged frame, got %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	rt := testutil.Runtime(t)
	ctx := context.Background()
	cfg := testutil.Config(t, t.TempDir())
	cfg.Image = "agentbox/does-not-exist:latest"
	if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrImageMissing) || !strings.Contains(err.Error(), "agentbox image build") {
		t.Errorf("missing image: %v", err)
	}
	cfg = testutil.Config(t, "/nonexistent/workspace")
	if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("missing workspace: %v", err)
	}
	f := t.TempDir() + "/file"
	_ = os.WriteFile(f, nil, 0o644)
	cfg = testutil.Config(t, f)
	if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("file as workspace: %v", err)
	}
	cfg = testutil.Config(t, t.TempDir())
	cfg.Runtime = "agentbox-no-such-runtime"
	if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "sandbox.runtime") {
		t.Errorf("unknown OCI runtime: %v", err)
	}
	cfg = testutil.Config(t, t.TempDir())
	cfg.ExecutorPath = "/bin/ls" // dynamically linked
	if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("dynamic executor: %v", err)
	}
}

// With background: keep, a process left behind survives the call (and a
// later call's timeout), while the timed-out call's own processes die.
func TestKeepBackground(t *testing.T) {
	cfg := testutil.Config(t, t.TempDir())
	cfg.KeepBackground = true
	s := testutil.StartWith(t, cfg)
	// The server keeps the pipe only briefly: redirect the survivor's output.
	res := sandboxtest.Exec(t, s, "nohup sleep 301 >/dev/null 2>&1 & echo started", 10*time.Second)
	if !strings.Contains(string(res.Output), "started") {
		t.Fatalf("start: %q", res.Output)
	}
	count := func(name string) int {
		r := sandboxtest.Exec(t, s, `n=0; for p in /proc/[0-9]*; do [ "$(cat $p/cmdline 2>/dev/null | tr '\0' ' ')" = "`+name+` " ] && n=$((n+1)); done; echo $n`, 10*time.Second)
		n, err := strconv.Atoi(strings.TrimSpace(string(r.Output)))
		if err != nil {
			t.Fatalf("counting %s: %q", name, r.Output)
		}
		return n
	}
	// A kept process runs on between calls; its exec of sleep (after
	// nohup's) may complete only once the tracer serves it again, during a
	// later call: poll, with a deadline.
	waitCount := func(name string, want int) int {
		deadline := time.Now().Add(15 * time.Second)
		n := count(name)
		for n != want && time.Now().Before(deadline) {
			n = count(name)
		}
		return n
	}
	if n := waitCount("sleep 301", 1); n != 1 {
		t.Fatalf("kept background process: %d running, want 1", n)
	}
	// One that keeps writing to the call's output must not die of SIGPIPE
	// once the call has returned.
	sandboxtest.Exec(t, s, "bash -c 'while :; do echo tick; sleep 0.05; done' & echo started", 10*time.Second)
	sandboxtest.Exec(t, s, "sleep 0.5", 10*time.Second)
	if n := waitCount("bash -c while :; do echo tick; sleep 0.05; done", 1); n != 1 {
		t.Errorf("a kept background process that writes output died: %d running", n)
	}
	res = sandboxtest.Exec(t, s, "setsid sleep 302 & sleep 300", time.Second)
	if !res.TimedOut {
		t.Fatalf("not timed out: %+v", res)
	}
	if n := count("sleep 301"); n != 1 {
		t.Errorf("the earlier background process died with a later call's timeout")
	}
	if n := count("sleep 302"); n != 0 {
		t.Errorf("the timed-out call's own escape survived")
	}
}

// Requests written into the container's stdin by anything but the host
// (here: via init's stdin) fail authentication; the executor stops and the
// session fails closed instead of running them.
func TestForgedRequestsRejected(t *testing.T) {
	s, ws := startDocker(t)
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{
		Command: `printf '\x00\x00\x00\x2a{"id":2,"op":"exec","command":"touch pwned"}' > /proc/1/fd/0 2>/dev/null && echo wrote`,
		Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("the writing call itself: %v", err)
	}
	if !strings.Contains(string(res.Output), "wrote") {
		t.Skip("the container's init stdin is not writable here; nothing to forge")
	}
	if _, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second}); !errors.Is(err, sandbox.ErrExecutor) {
		t.Fatalf("want ErrExecutor after a forged request, got %v", err)
	}
	if _, err := os.Stat(ws + "/pwned"); err == nil {
		t.Fatalf("the forged request ran")
	}
}

// The sandbox runs as the configured uid:gid (by default the invoking
// user's), so what it creates in the workspace belongs to that user.
func TestRunsAsConfiguredUser(t *testing.T) {
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := testutil.Config(t, ws)
	cfg.User = "4321:4321"
	s := testutil.StartWith(t, cfg)
	res := sandboxtest.Exec(t, s, "id -u; id -g; touch by-exec", 10*time.Second)
	if got := strings.Fields(string(res.Output)); len(got) != 2 || got[0] != "4321" || got[1] != "4321" {
		t.Fatalf("id: %q", res.Output)
	}
	if _, err := s.WriteFile(context.Background(), sandbox.WriteRequest{Path: "by-write", Content: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"by-exec", "by-write"} {
		fi, err := os.Stat(ws + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4321 || st.Gid != 4321 {
			t.Errorf("%s is owned by %d:%d, want 4321:4321", name, st.Uid, st.Gid)
		}
	}
}

// network: open is the only way to a network interface besides lo.
func TestNetworkOpen(t *testing.T) {
	cfg := testutil.Config(t, t.TempDir())
	cfg.Network = "open"
	s := testutil.StartWith(t, cfg)
	res := sandboxtest.Exec(t, s, "ls /sys/class/net | sort | tr '\\n' ' '", 10*time.Second)
	if got := strings.Fields(string(res.Output)); len(got) < 2 || !slices.Contains(got, "lo") {
		t.Fatalf("interfaces with network open: %q", res.Output)
	}
}
