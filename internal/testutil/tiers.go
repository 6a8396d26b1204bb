package testutil

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/client"
)

// Tier is one isolation tier the conformance and hardening suites run
// under: an engine (the local Docker engine, or a private Podman service)
// and an OCI runtime on it.
type Tier struct {
	Name    string // runc, runsc, podman
	Runtime string // sandbox.Config.Runtime ("" = the engine's default)
	Client  *client.Client
	GVisor  bool // the sandbox runs under gVisor's own kernel
	Podman  bool // the engine is Podman's Docker-compatible API
	// User, if set, is the sandbox user of Starter's sessions.
	User string
	// Unavailable says why the tier cannot run on this machine ("" when
	// it can).
	Unavailable string

	mu       sync.Mutex
	sessions []string
}

// Tiers returns every tier this machine must test: runc and runsc on the
// Docker engine, and rootful Podman (a private service, see StartPodman,
// stopped when t ends). A tier that is not available here carries the
// reason; Require skips it, or fails under AGENTBOX_REQUIRE_DOCKER=1.
func Tiers(t *testing.T) []*Tier {
	t.Helper()
	cli := RequireDocker(t)
	runsc := &Tier{Name: "runsc", Runtime: "runsc", Client: cli, GVisor: true}
	info, err := cli.Info(context.Background())
	if err != nil {
		t.Fatalf("engine info: %v", err)
	}
	if _, ok := info.Runtimes["runsc"]; !ok {
		runsc.Unavailable = "the Docker engine has no OCI runtime runsc: install gVisor's runsc and register it with the engine (see .ci/run)"
	}
	pm := &Tier{Name: "podman", Podman: true}
	if p, err := StartPodman(t); err != nil {
		pm.Unavailable = err.Error()
	} else {
		pm.Client = p.Client
	}
	return []*Tier{{Name: "runc", Client: cli}, runsc, pm}
}

// HasRuntime reports whether the engine has OCI runtime name; when not, it
// skips the test, or fails it under AGENTBOX_REQUIRE_DOCKER=1.
func HasRuntime(t *testing.T, cli *client.Client, name string) bool {
	t.Helper()
	info, err := cli.Info(context.Background())
	if err != nil {
		t.Fatalf("engine info: %v", err)
	}
	if _, ok := info.Runtimes[name]; ok {
		return true
	}
	tr := &Tier{Name: name, Unavailable: "the Docker engine has no OCI runtime " + name + ": install it and register it with the engine (see .ci/run)"}
	tr.Require(t)
	return false
}

// Require skips the test, or fails it under AGENTBOX_REQUIRE_DOCKER=1,
// when the tier is not available on this machine.
func (tr *Tier) Require(t *testing.T) {
	t.Helper()
	if tr.Unavailable == "" {
		return
	}
	if os.Getenv("AGENTBOX_REQUIRE_DOCKER") == "1" {
		t.Fatalf("tier %s: %s, and AGENTBOX_REQUIRE_DOCKER=1", tr.Name, tr.Unavailable)
	}
	t.Skipf("tier %s: %s", tr.Name, tr.Unavailable)
}

// NewRuntime is a runtime on the tier's engine whose containers are all
// removed when the test ends.
func (tr *Tier) NewRuntime(t testing.TB) *docker.Runtime {
	t.Helper()
	rt := docker.New(tr.Client)
	t.Cleanup(func() { _ = rt.CloseAll(context.Background()) })
	return rt
}

// Config is a default session configuration for the tier on workspace ws.
func (tr *Tier) Config(t testing.TB, ws string) sandbox.Config {
	cfg := Config(t, ws)
	cfg.Runtime = tr.Runtime
	return cfg
}

// Start starts a session with cfg on the tier, closed at test end; the
// tier remembers it for Leftovers.
func (tr *Tier) Start(t testing.TB, cfg sandbox.Config) sandbox.Session {
	t.Helper()
	rt := tr.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := rt.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting a sandbox on %s: %v", tr.Name, err)
	}
	tr.mu.Lock()
	tr.sessions = append(tr.sessions, s.ID())
	tr.mu.Unlock()
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Starter is the sandboxtest.Start of the tier: a fresh workspace and a
// session with test-sized limits.
func (tr *Tier) Starter(t *testing.T) (sandbox.Session, string) {
	ws := t.TempDir()
	cfg := tr.Config(t, ws)
	if tr.User != "" {
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
		cfg.User = tr.User
	}
	cfg.MemoryBytes = 256 << 20
	cfg.Pids = 128
	return tr.Start(t, cfg), ws
}

// Leftovers lists the containers still on the engine of the sessions the
// tier started.
func (tr *Tier) Leftovers(t testing.TB) []string {
	t.Helper()
	tr.mu.Lock()
	ids := slices.Clone(tr.sessions)
	tr.mu.Unlock()
	var left []string
	for _, id := range ids {
		left = append(left, Leftovers(t, tr.Client, id)...)
	}
	return left
}
