package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/go-units"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Engine is the part of the Docker SDK client the sandbox uses.
type Engine interface {
	Ping(ctx context.Context) (types.Ping, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, id string, opts container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, id string, opts container.StartOptions) error
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerRemove(ctx context.Context, id string, opts container.RemoveOptions) error
	ContainerList(ctx context.Context, opts container.ListOptions) ([]container.Summary, error)
}

var _ Engine = (*client.Client)(nil)

// In-container paths.
const (
	WorkspaceDir = "/workspace"
	executorPath = "/.agentbox/agentbox"
)

// Docker is the Runtime backed by a Docker engine.
type Docker struct {
	eng   Engine
	owner string
	host  string

	mu   sync.Mutex
	live map[string]*dockerSession
}

var _ Runtime = (*Docker)(nil)

// NewClient connects to the engine named by the environment (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) with API version negotiation and
// checks that it answers.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %v; check DOCKER_HOST", ErrUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: cannot reach the Docker engine at %s: %v; start it (systemctl start docker, or dockerd &) or point DOCKER_HOST at one",
			ErrUnavailable, engineHost(cli), shortErr(err))
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

func engineHost(cli *client.Client) string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return cli.DaemonHost()
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// NewDocker returns a Runtime on the given engine.
func NewDocker(eng Engine) *Docker {
	return &Docker{eng: eng, owner: OwnerLabel(), host: hostname(), live: map[string]*dockerSession{}}
}

// Start creates, attaches and starts one hardened container running the
// executor, and completes the hello exchange. On any failure nothing is
// left behind.
func (d *Docker) Start(ctx context.Context, cfg Config) (Session, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	exe, err := ExecutorBinary(cfg.ExecutorPath)
	if err != nil {
		return nil, err
	}
	img, err := d.eng.ImageInspect(ctx, cfg.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: image %s is not on this engine; build it with `agentbox image build` (or `make image`)", ErrImageMissing, cfg.Image)
		}
		return nil, fmt.Errorf("%w: inspecting image %s: %v", ErrUnavailable, cfg.Image, shortErr(err))
	}
	id := cfg.SessionID
	if id == "" {
		id = NewID()
	}
	ccfg, hc := containerSpec(cfg, exe, id, d.owner, d.host)
	ccfg.Image = img.ID // run exactly the image inspected (and audited), not whatever the tag points to later
	s := &dockerSession{rt: d, id: id, cfg: cfg, info: Info{SessionID: id, Image: cfg.Image, ImageID: img.ID, Runtime: cfg.Runtime, User: ccfg.User}}
	d.track(s)
	resp, err := d.eng.ContainerCreate(ctx, ccfg, hc, nil, nil, "agentbox-"+id[:12])
	if err != nil {
		// The engine may have created it even though the call failed (the
		// request was cancelled mid-flight): remove it by its label.
		d.removeSession(context.WithoutCancel(ctx), id)
		d.untrack(s)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrClosed, context.Cause(ctx))
		}
		if cfg.Runtime != "" && strings.Contains(strings.ToLower(err.Error()), "runtime") {
			return nil, fmt.Errorf("%w: the engine has no OCI runtime %q (sandbox.runtime in the policy): install and register it with the engine (gVisor: runsc), or set runtime: \"\"", ErrUnavailable, cfg.Runtime)
		}
		return nil, fmt.Errorf("%w: creating the container: %v", ErrUnavailable, shortErr(err))
	}
	s.setContainerID(resp.ID)
	if len(resp.Warnings) > 0 {
		// The engine accepted the container but could not apply part of
		// its configuration (typically a limit): refuse to run unguarded.
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%w: the engine could not apply the sandbox configuration (%s); agentbox does not run unguarded — see agentbox doctor", ErrUnavailable, strings.Join(resp.Warnings, "; "))
	}
	if s.closed.Load() {
		// CloseAll ran while the container was being created.
		d.removeSession(context.WithoutCancel(ctx), id)
		return nil, fmt.Errorf("%w: the runtime was shut down while the sandbox started", ErrClosed)
	}
	if err := s.connect(ctx); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func checkConfig(cfg *Config) error {
	if cfg.SessionID != "" && !validID(cfg.SessionID) {
		return fmt.Errorf("%w: session id %q: want 12 to 64 hex digits", ErrConfig, cfg.SessionID)
	}
	if cfg.Image == "" {
		cfg.Image = "agentbox/base:latest"
	}
	ws, err := ResolveWorkspace(cfg.Workspace)
	if err != nil {
		return err
	}
	cfg.Workspace = ws
	switch cfg.WorkspaceMode {
	case "":
		cfg.WorkspaceMode = "rw"
	case "rw", "ro":
	default:
		return fmt.Errorf("%w: workspace mode %q: want rw or ro", ErrConfig, cfg.WorkspaceMode)
	}
	switch cfg.Network {
	case "":
		cfg.Network = "none"
	case "none", "open":
	default:
		return fmt.Errorf("%w: network %q: want none or open", ErrConfig, cfg.Network)
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = 1
	}
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = 1 << 30
	}
	if cfg.MemoryBytes < 8<<20 {
		return fmt.Errorf("%w: memory limit %d bytes is below the 8 MiB minimum", ErrConfig, cfg.MemoryBytes)
	}
	if cfg.Pids <= 0 {
		cfg.Pids = 256
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = wire.DefaultOutputCap
	}
	if cfg.User == "" {
		cfg.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	}
	return nil
}

// containerSpec is every hardening default of DESIGN.md in one place.
func containerSpec(cfg Config, exe, id, owner, host string) (*container.Config, *container.HostConfig) {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp"}
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	netMode := "none"
	if cfg.Network == "open" {
		netMode = "bridge"
	}
	yes := true
	pids := cfg.Pids
	ccfg := &container.Config{
		Image:           cfg.Image,
		Cmd:             []string{executorPath, "executor"},
		Entrypoint:      []string{},
		User:            cfg.User,
		Env:             env,
		WorkingDir:      WorkspaceDir,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: cfg.Network != "open",
		Labels:          map[string]string{LabelSession: id, LabelOwner: owner, LabelHost: host},
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(netMode),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
		Init:           &yes,
		Runtime:        cfg.Runtime,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     cfg.MemoryBytes,
			MemorySwap: cfg.MemoryBytes,
			NanoCPUs:   int64(cfg.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: 4096, Hard: 4096},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: cfg.Workspace, Target: WorkspaceDir, ReadOnly: cfg.WorkspaceMode == "ro"},
			{Type: mount.TypeBind, Source: exe, Target: executorPath, ReadOnly: true},
		},
	}
	return ccfg, hc
}

// NewID returns a new random session id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (d *Docker) track(s *dockerSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live[s.id] = s
}

func (d *Docker) untrack(s *dockerSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.live, s.id)
}

// CloseAll removes every container this runtime started that is still
// open. The CLI calls it on SIGINT/SIGTERM.
func (d *Docker) CloseAll(ctx context.Context) error {
	d.mu.Lock()
	var all []*dockerSession
	for _, s := range d.live {
		all = append(all, s)
	}
	d.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

// GC removes agentbox containers on this engine whose owning process (on
// this host) is gone. It never touches containers of live processes or of
// other hosts. It returns the ids removed.
func GC(ctx context.Context, eng Engine) ([]string, error) {
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, fmt.Errorf("%w: listing containers: %v", ErrUnavailable, shortErr(err))
	}
	me := hostname()
	var removed []string
	var errs []error
	for _, c := range list {
		if c.Labels[LabelHost] != me || ownerAlive(c.Labels[LabelOwner]) {
			continue
		}
		// Not found or conflict: another gc is removing it already.
		if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.ID)
	}
	return removed, errors.Join(errs...)
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ListSandboxes returns the ids of agentbox containers on the engine, all of
// them or those of one session.
func ListSandboxes(ctx context.Context, eng Engine, session string) ([]string, error) {
	label := LabelSession
	if session != "" {
		label += "=" + session
	}
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("%w: listing containers: %v", ErrUnavailable, shortErr(err))
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// OwnedBy returns the ids of the agentbox containers owned by process pid on
// this host.
func OwnedBy(ctx context.Context, eng Engine, pid int) ([]string, error) {
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, fmt.Errorf("%w: listing containers: %v", ErrUnavailable, shortErr(err))
	}
	var ids []string
	prefix := fmt.Sprintf("%d:", pid)
	for _, c := range list {
		if c.Labels[LabelHost] == hostname() && strings.HasPrefix(c.Labels[LabelOwner], prefix) {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

func validID(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// removeSession removes every container labelled with session id.
func (d *Docker) removeSession(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ids, err := ListSandboxes(ctx, d.eng, id)
	if err != nil {
		return
	}
	for _, cid := range ids {
		_ = d.eng.ContainerRemove(ctx, cid, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// ResolveWorkspace checks that dir is a directory that may be mounted as
// the workspace and returns its absolute path with symlinks resolved.
func ResolveWorkspace(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no workspace directory given; pass --workspace DIR", ErrConfig)
	}
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s: %v", ErrConfig, dir, err)
	}
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return "", fmt.Errorf("%w: workspace %s does not exist; create it or pass --workspace DIR", ErrConfig, dir)
	}
	fi, err := os.Stat(ws)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: workspace %s is not a directory; pass --workspace DIR", ErrConfig, dir)
	}
	if ws == "/" {
		return "", fmt.Errorf("%w: refusing to mount / as the workspace; pass --workspace DIR", ErrConfig)
	}
	return ws, nil
}
