package docker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/container"
)

// podmanEngine checks, on the private Podman service of tier tr, what
// differs between engines: the spec the engine reports (hardening, init,
// labels), gc of orphans by owner, the errors, and doctor's engine line.
func podmanEngine(t *testing.T, tr *testutil.Tier) {
	ctx := context.Background()
	t.Run("Inspect", func(t *testing.T) {
		s, ws := tr.Starter(t)
		ins, err := tr.Client.ContainerInspect(ctx, s.Info().ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		hc := ins.HostConfig
		// Podman reports CapDrop ALL expanded into its default set; that
		// nothing is left is the hardening suite's caps check.
		if string(hc.NetworkMode) != "none" || len(hc.CapDrop) == 0 || len(hc.CapAdd) != 0 {
			t.Errorf("network %q capdrop %v capadd %v", hc.NetworkMode, hc.CapDrop, hc.CapAdd)
		}
		// No engine init: the executor is PID 1 (checked below).
		if !hc.ReadonlyRootfs || hc.Privileged || (hc.Init != nil && *hc.Init) {
			t.Errorf("readonly=%v privileged=%v init=%v", hc.ReadonlyRootfs, hc.Privileged, hc.Init)
		}
		if hc.PidsLimit == nil || *hc.PidsLimit != 128 || hc.Memory != 256<<20 {
			t.Errorf("limits: pids %v memory %d", hc.PidsLimit, hc.Memory)
		}
		if ins.Config.Labels[docker.LabelSession] != s.ID() || ins.Config.Labels[docker.LabelOwner] != docker.OwnerLabel() {
			t.Errorf("labels %v", ins.Config.Labels)
		}
		var sawWS bool
		for _, m := range ins.Mounts {
			sawWS = sawWS || m.Destination == sandbox.WorkspaceDir && m.Source == ws
		}
		if !sawWS {
			t.Errorf("workspace mount missing: %+v", ins.Mounts)
		}
		res := sandboxExec(t, s, "cat /proc/1/comm")
		if got := strings.TrimSpace(res); got != "agentbox" {
			t.Errorf("pid 1 is %q, want the executor (agentbox): no engine init", got)
		}
	})
	// A staged workspace (rw, an overlay copy) is refused with the reason:
	// Podman's API would mount its overlay volume as an empty directory,
	// and the sandbox would work on nothing (its writes lost). No
	// container is left.
	t.Run("StagedWorkspaceRefused", func(t *testing.T) {
		ws, base := t.TempDir(), t.TempDir()
		writeTestFile(t, ws+"/README", "the user's file\n")
		cfg := tr.Config(t, ws)
		cfg.Overlay = &sandbox.Overlay{Upper: base + "/upper", Work: base + "/work", Staged: true}
		for _, d := range []string{cfg.Overlay.Upper, cfg.Overlay.Work} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		rt := tr.NewRuntime(t)
		s, err := rt.Start(ctx, cfg)
		if err == nil {
			out := sandboxExec(t, s, "ls -A /workspace")
			_ = s.Close(ctx)
			t.Fatalf("a staged workspace started on Podman; it sees %q", out)
		}
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "empty directory") {
			t.Fatalf("refusal without the reason: %v", err)
		}
	})
	t.Run("GC", func(t *testing.T) {
		host, _ := os.Hostname()
		mk := func(owner string) string {
			labels := docker.OwnerLabels()
			labels[docker.LabelSession], labels[docker.LabelOwner], labels[docker.LabelHost] = sandbox.NewID(), owner, host
			resp, err := tr.Client.ContainerCreate(ctx, &container.Config{Image: testutil.Image, Cmd: []string{"true"},
				Labels: labels}, nil, nil, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tr.Client.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true}) })
			return resp.ID
		}
		orphan, live := mk("999999999:1"), mk(docker.OwnerLabel())
		res, err := docker.GC(ctx, tr.Client, sandbox.GCOptions{})
		if err != nil {
			t.Fatal(err)
		}
		removed := res.Removed
		var ids []string
		for _, r := range removed {
			ids = append(ids, r.ID)
		}
		if !slices.Contains(ids, orphan) || slices.Contains(ids, live) {
			t.Errorf("gc removed %v; want the orphan %s and not the live owner's %s", removed, orphan, live)
		}
		if _, err := tr.Client.ContainerInspect(ctx, orphan); err == nil {
			t.Errorf("the orphan is still there")
		}
	})
	t.Run("Errors", func(t *testing.T) {
		rt := tr.NewRuntime(t)
		cfg := tr.Config(t, t.TempDir())
		cfg.Image = "agentbox/does-not-exist:latest"
		if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrImageMissing) || !strings.Contains(err.Error(), "agentbox image build") {
			t.Errorf("missing image: %v", err)
		}
		// Podman's compatible API ignores the runtime a container asks
		// for: any sandbox.runtime is refused, never silently runc.
		for _, rtName := range []string{"agentbox-no-such-runtime", "runsc"} {
			cfg = tr.Config(t, t.TempDir())
			cfg.Runtime = rtName
			if _, err := rt.Start(ctx, cfg); !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "sandbox.runtime") {
				t.Errorf("OCI runtime %s on Podman: %v", rtName, err)
			}
		}
	})
	t.Run("Doctor", func(t *testing.T) {
		cmd := exec.Command(testutil.Binary(t), "doctor")
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+tr.Client.DaemonHost())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "engine         Podman ") || !strings.Contains(string(out), "(Docker API 1.") || !strings.Contains(string(out), "all good") {
			t.Errorf("doctor against Podman: %v\n%s", err, out)
		}
	})
}

func sandboxExec(t *testing.T, s sandbox.Session, cmd string) string {
	t.Helper()
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Output)
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
