package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/client"
)

// Podman is a private `podman system service` speaking the Docker API on
// its own socket, with its own storage, run directory and network
// configuration: nothing touches the machine's Podman state. The sandbox
// image is loaded into it from the Docker engine.
type Podman struct {
	Client *client.Client
	Socket string // unix:///…/podman.sock, for DOCKER_HOST
	dir    string
	cmd    *exec.Cmd
}

// podmanArgs are the global options that keep every podman command on the
// private state under dir.
func podmanArgs(dir string) []string {
	return []string{
		"--root", filepath.Join(dir, "root"),
		"--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"),
		"--volumepath", filepath.Join(dir, "volumes"),
		"--network-config-dir", filepath.Join(dir, "net"),
		"--cgroup-manager", "cgroupfs",
		"--events-backend", "file",
	}
}

// StartPodman starts a private rootful Podman service with the sandbox
// image loaded and stops it, removing its state, when t ends; at that
// point no agentbox container may be left on it. It returns an error
// saying what to install when Podman is missing here.
func StartPodman(t *testing.T) (*Podman, error) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, errors.New("podman is not installed (apt-get install podman catatonit)")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the rootful Podman tier needs root")
	}
	dir, err := os.MkdirTemp("", "agentbox-podman-")
	if err != nil {
		return nil, err
	}
	p := &Podman{dir: dir, Socket: "unix://" + filepath.Join(dir, "podman.sock")}
	t.Cleanup(func() { p.stop(t) })
	if err := p.loadImage(); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p.cmd = exec.Command("podman", append(podmanArgs(dir), "system", "service", "--time=0", p.Socket)...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting podman system service: %w", err)
	}
	p.Client, err = client.NewClientWithOpts(client.WithHost(p.Socket), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.Client.Ping(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("podman system service did not answer on %s: %v; its log: %s", p.Socket, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Client.NegotiateAPIVersion(context.Background())
	return p, nil
}

// Podman runs a podman command on the private state.
func (p *Podman) Podman(args ...string) ([]byte, error) {
	cmd := exec.Command("podman", append(podmanArgs(p.dir), args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// loadImage copies the sandbox image from the Docker engine:
// docker save | podman load.
func (p *Podman) loadImage() error {
	save := exec.Command("docker", "save", Image)
	load := exec.Command("podman", append(podmanArgs(p.dir), "load", "-q")...)
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	var saveErr, loadOut bytes.Buffer
	save.Stderr = &saveErr
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := save.Start(); err != nil {
		return fmt.Errorf("docker save %s: %w", Image, err)
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil || lerr != nil {
		return fmt.Errorf("docker save %s | podman load: %v %s; %v %s", Image, serr, saveErr.Bytes(), lerr, loadOut.Bytes())
	}
	return nil
}

// stop fails t if an agentbox container is left on the service, then
// removes every container, stops the service and removes its state.
func (p *Podman) stop(t *testing.T) {
	if p.Client != nil {
		if ids, err := docker.ListSandboxes(context.Background(), p.Client, ""); err != nil {
			t.Errorf("listing containers on Podman: %v", err)
		} else if len(ids) > 0 {
			t.Errorf("%d agentbox container(s) left behind on Podman: %v", len(ids), ids)
		}
		p.Client.Close()
	}
	if _, err := p.Podman("rm", "--all", "--force", "--time", "0"); err != nil {
		t.Errorf("removing Podman's containers: %v", err)
	}
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if err := os.RemoveAll(p.dir); err != nil {
		t.Errorf("removing Podman's private state: %v", err)
	}
}
