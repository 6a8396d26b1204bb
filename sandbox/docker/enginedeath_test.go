package docker_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// privateEngine is testutil.PrivateEngine.
type privateEngine = testutil.PrivateEngine

// TestEngineDeathMidCommand kills (or stalls) the engine while a command
// runs that would write the workspace later: agentbox exits 125 saying
// what is known, the workspace never changes (the executor's dead man's
// switch kills the command), and once the engine is back the sandbox no
// longer runs and gc removes it.
func TestEngineDeathMidCommand(t *testing.T) {
	testutil.RequireDocker(t)
	bin := testutil.Binary(t)
	if os.Getenv("AGENTBOX_ENGINE_DEATH_TEST") != "1" {
		t.Skip("starts a second dockerd and loads the image into it (about a minute): set AGENTBOX_ENGINE_DEATH_TEST=1 to run it")
	}
	if os.Geteuid() != 0 {
		t.Skip("a second dockerd needs root")
	}
	for _, tool := range []string{"dockerd", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir, err := os.MkdirTemp("", "abX")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e := &privateEngine{Dir: dir, Host: "unix://" + filepath.Join(dir, "docker.sock")}
	cli := e.Start(t)
	t.Cleanup(func() {
		// Whatever the outcome: no container, then no engine, left behind.
		if c, err := client.NewClientWithOpts(client.WithHost(e.Host), client.WithAPIVersionNegotiation()); err == nil {
			ids, _ := docker.ListSandboxes(context.Background(), c, "")
			for _, id := range ids {
				_ = c.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
			}
		}
		e.Stop()
	})

	e.LoadImage(t)

	for _, fault := range []string{"killed", "stalled"} {
		t.Run(fault, func(t *testing.T) {
			cli = engineFault(t, e, cli, bin, fault)
		})
	}
}

// engineFault runs a command that would write the workspace after 15 s,
// then kills (kill -9) or stalls (SIGSTOP) the engine; it returns the
// client of the engine once it is back.
func engineFault(t *testing.T, e *privateEngine, cli *client.Client, bin, fault string) *client.Client {
	ws := t.TempDir()
	env := append(os.Environ(), "DOCKER_HOST="+e.Host, "AGENTBOX_AUDIT="+filepath.Join(e.Dir, "audit.jsonl"))
	const writeAfter = 15 * time.Second
	run := exec.Command(bin, "exec", "-w", ws, "--approve", "allow", "--timeout", "20s", "--", "sleep 15; echo changed > marker")
	run.Env = env
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()

	running := func() []container.Summary {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", docker.LabelSession))})
		if err != nil {
			return nil
		}
		return list
	}
	testutil.Eventually(t, 60*time.Second, "the sandbox to run on the private engine", func() bool { return len(running()) == 1 })
	id := running()[0].ID
	want := "may still exist"
	if fault == "killed" {
		e.Kill9()
	} else {
		e.Signal(syscall.SIGSTOP)
		want = "no answer from the engine"
	}

	select {
	case err := <-exited:
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		t.Logf("agentbox exited %d after %s: %s", code, time.Since(started).Round(time.Second), stderr.String())
		if code != 125 {
			t.Errorf("exit %d (%v), want 125; stderr: %s", code, err, stderr.String())
		}
		for _, w := range []string{want, "may still exist", "agentbox gc"} {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("the error should say %q: %s", w, stderr.String())
			}
		}
	case <-time.After(120 * time.Second):
		_ = run.Process.Kill()
		t.Fatalf("agentbox did not return after the engine %s; stderr: %s", fault, stderr.String())
	}

	// Poll past the time the command would have written the workspace.
	deadline := started.Add(writeAfter + 10*time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(ws, "marker")); err == nil {
			t.Fatalf("the workspace changed after agentbox returned")
		}
		time.Sleep(200 * time.Millisecond)
	}

	if fault == "killed" {
		cli = e.Start(t)
	} else {
		e.Signal(syscall.SIGCONT)
	}
	testutil.Eventually(t, 60*time.Second, "the sandbox to have stopped", func() bool {
		ins, err := cli.ContainerInspect(context.Background(), id)
		return err != nil || ins.State == nil || !ins.State.Running
	})
	// A resumed engine may still be working through the removals asked
	// of it while it was stopped: gc until nothing is left.
	testutil.Eventually(t, 60*time.Second, "gc to leave no sandbox on the engine", func() bool {
		gc := exec.Command(bin, "gc")
		gc.Env = env
		if out, err := gc.CombinedOutput(); err != nil {
			t.Logf("gc: %v %s", err, out)
		}
		ids, err := docker.ListSandboxes(context.Background(), cli, "")
		return err == nil && len(ids) == 0
	})
	if _, err := os.Stat(filepath.Join(ws, "marker")); err == nil {
		t.Fatalf("the workspace changed")
	}
	return cli
}
