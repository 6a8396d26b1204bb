package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// PrivateEngine is a second dockerd on its own socket, data root,
// containerd, network and mount namespaces: a test may stop or kill it,
// never the machine's engine. Dir holds its state, Host its socket URL.
type PrivateEngine struct {
	Dir  string
	Host string
	cmd  *exec.Cmd
}

// Start starts (or restarts) the engine and waits until it answers.
func (e *PrivateEngine) Start(t testing.TB) *client.Client {
	t.Helper()
	conf := filepath.Join(e.Dir, "daemon.json")
	if err := os.WriteFile(conf, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its own network namespace: a dockerd started with --bridge none
	// deletes the host's docker0 interface, which the machine's engine
	// needs (it happened).
	// And its own mount namespace: dockerd leaves its data root mounted
	// over itself after it exits.
	e.cmd = exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "dockerd", "--config-file", conf,
		"--host", e.Host, "--data-root", filepath.Join(e.Dir, "root"), "--exec-root", filepath.Join(e.Dir, "exec"),
		"--pidfile", filepath.Join(e.Dir, "pid"), "--bridge", "none", "--iptables=false", "--ip-masq=false",
		"--storage-driver", "fuse-overlayfs", "--cgroup-parent", "agentbox-enginedeath", "--log-level", "error")
	log, err := os.OpenFile(filepath.Join(e.Dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e.cmd.Stdout, e.cmd.Stderr = log, log
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cli, err := client.NewClientWithOpts(client.WithHost(e.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, "the private engine to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Ping(ctx)
		return err == nil
	})
	return cli
}

// Kill9 kills the engine and waits for it; its containerd and shims stay.
func (e *PrivateEngine) Kill9() {
	_ = e.cmd.Process.Signal(syscall.SIGKILL)
	_ = e.cmd.Wait()
}

// Stop ends the engine and everything of its process group.
func (e *PrivateEngine) Stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// LoadImage copies the test image from the machine's engine into e.
func (e *PrivateEngine) LoadImage(t testing.TB) {
	t.Helper()
	save := exec.Command("docker", "save", Image)
	load := exec.Command("docker", "-H", e.Host, "load", "-q")
	pipe, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("loading the image into the private engine: %v %s", err, out)
	}
	if err := save.Wait(); err != nil {
		t.Fatal(err)
	}
}

// RequirePrivateEngine skips unless a second dockerd may be started here
// (root, dockerd and unshare installed, AGENTBOX_ENGINE_DEATH_TEST=1: it
// loads the image into it, about a minute).
func RequirePrivateEngine(t testing.TB) {
	t.Helper()
	if os.Getenv("AGENTBOX_ENGINE_DEATH_TEST") != "1" {
		t.Skip("starts a second dockerd and loads the image into it (about a minute): set AGENTBOX_ENGINE_DEATH_TEST=1 to run it")
	}
	if os.Geteuid() != 0 {
		t.Skip("a second dockerd needs root")
	}
	for _, tool := range []string{"dockerd", "unshare", "docker"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// Signal sends sig to the engine process (SIGSTOP stalls it).
func (e *PrivateEngine) Signal(sig os.Signal) { _ = e.cmd.Process.Signal(sig) }
