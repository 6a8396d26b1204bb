// Package testutil gives tests the real things they run against: a static
// agentbox binary (the executor) and the local Docker engine with the
// sandbox image. With AGENTBOX_REQUIRE_DOCKER=1 (set by `make test`) a
// missing engine or image fails the test instead of skipping it.
package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Image is the sandbox image the tests use; it is built locally by
// `make image`, never pulled.
const Image = sandbox.DefaultImage

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// RepoRoot is the module root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary returns a static agentbox binary: $AGENTBOX_BIN if set (make test
// sets it), else one built once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("AGENTBOX_BIN"); p != "" {
			binPath, binErr = filepath.Abs(p)
			return
		}
		dir, err := os.MkdirTemp("", "agentbox-testbin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "agentbox")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/agentbox")
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = &buildError{out: string(out), err: err}
		}
	})
	if binErr != nil {
		t.Fatalf("building the agentbox binary: %v", binErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// RequireDocker skips (or, with AGENTBOX_REQUIRE_DOCKER=1, fails) unless an
// engine answers and the sandbox image is present. It returns a client.
func RequireDocker(t testing.TB) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := docker.NewClient(ctx)
	if err == nil {
		if _, ierr := cli.ImageInspect(ctx, Image); ierr != nil {
			cli.Close()
			err = ierr
		}
	}
	if err != nil {
		if os.Getenv("AGENTBOX_REQUIRE_DOCKER") == "1" {
			t.Fatalf("Docker engine or image %s unavailable and AGENTBOX_REQUIRE_DOCKER=1: %v (run `make image`)", Image, err)
		}
		t.Skipf("Docker unavailable (%v); set AGENTBOX_REQUIRE_DOCKER=1 to fail instead", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Runtime returns a Docker runtime whose containers are all removed when the
// test ends.
func Runtime(t testing.TB) *docker.Runtime {
	t.Helper()
	rt := docker.New(RequireDocker(t))
	t.Cleanup(func() { _ = rt.CloseAll(context.Background()) })
	return rt
}

// Config is a default session configuration on workspace ws. It checks
// for an engine before building the executor binary: without one the test
// skips (or fails, AGENTBOX_REQUIRE_DOCKER=1) at once, and `make unit` with
// a cold cache builds nothing only to skip.
func Config(t testing.TB, ws string) sandbox.Config {
	t.Helper()
	RequireDocker(t)
	return sandbox.Config{Image: Image, Workspace: ws, ExecutorPath: Binary(t), OutputCap: sandbox.DefaultOutputCap}
}

// StartSession starts a session on ws (a new temp dir when ""), closed at
// test end.
func StartSession(t testing.TB, ws string) sandbox.Session {
	t.Helper()
	RequireDocker(t) // before the binary is built (Config)
	if ws == "" {
		ws = t.TempDir()
	}
	return StartWith(t, Config(t, ws))
}

// StartWith starts a session with cfg, closed at test end.
func StartWith(t testing.TB, cfg sandbox.Config) sandbox.Session {
	t.Helper()
	rt := Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := rt.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting sandbox: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Leftovers lists agentbox containers on the engine (any owner).
func Leftovers(t testing.TB, cli *client.Client, session string) []string {
	t.Helper()
	ids, err := docker.ListSandboxes(context.Background(), cli, session)
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	return ids
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// OwnedBy returns the ids of the agentbox containers owned by process pid
// on this host.
func OwnedBy(ctx context.Context, eng docker.Engine, pid int) ([]string, error) {
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelSession))})
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var ids []string
	prefix := fmt.Sprintf("%d:", pid)
	for _, c := range list {
		if c.Labels[docker.LabelHost] == host && strings.HasPrefix(c.Labels[docker.LabelOwner], prefix) {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

// ManifestEnv is the environment entry that makes every agentbox process a
// test starts share one cache of image manifests (see
// sandbox.ManifestDir): with a fresh XDG_STATE_HOME per test, each session
// would otherwise list the image's executables anew (about 1.5 s here).
// The cache holds one small file per image id and outlives the run.
func ManifestEnv() string {
	return "AGENTBOX_MANIFEST_DIR=" + filepath.Join(os.TempDir(), "agentbox-test-manifests-"+strconv.Itoa(os.Getuid()))
}
