package docker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// Runtime is the sandbox.Runtime backed by a Docker engine.
type Runtime struct {
	eng   Engine
	cli   *client.Client // set by Connect
	owner map[string]string
	host  string

	live sandbox.Live[*dockerSession]

	qmu sync.Mutex
	q   *quirks // the engine's differences from Docker (podman.go)

	umu       sync.Mutex
	unremoved map[string]bool // sessions whose containers the engine could not remove yet
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a Runtime on the given engine.
func New(eng Engine) *Runtime {
	return &Runtime{eng: withDeadlines(eng), owner: OwnerLabels(), host: hostname()}
}

// Start creates, attaches and starts one hardened container running the
// executor, and completes the hello exchange. On any failure nothing is
// left behind.
func (d *Runtime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	exe, err := sandbox.ExecutorBinary(cfg.ExecutorPath)
	if err != nil {
		return nil, err
	}
	img, err := d.eng.ImageInspect(ctx, cfg.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: image %s is not on this engine; build it with `%s` (or `make image`)", sandbox.ErrImageMissing, cfg.Image, sandbox.ImageBuildHint(cfg.Image))
		}
		return nil, fmt.Errorf("%w: inspecting image %s: %w", sandbox.ErrUnavailable, cfg.Image, err)
	}
	q, err := d.quirks(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	id := cfg.SessionID
	if id == "" {
		id = sandbox.NewID()
	}
	prof, err := seccompProfile(cfg.Runtime == GVisorRuntime)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrConfig, err)
	}
	masks, err := prepareMasks(ctx, cfg, id)
	if err != nil {
		return nil, err
	}
	ccfg, hc := containerSpec(cfg, exe, id, d.owner, d.host, prof, masks.mounts)
	if err := applyOverlay(cfg, hc, ccfg.Labels); err != nil {
		masks.remove()
		return nil, err
	}
	ccfg.Image = img.ID                                     // run exactly the image inspected (and audited), not whatever the tag points to later
	cfg.Enforce.ByContent, cfg.Enforce.Image = true, img.ID // its manifest of executables is cached under this id
	applyGVisor(cfg, hc)
	if err := q.apply(ccfg, hc); err != nil {
		masks.remove()
		return nil, err
	}
	if err := q.seccompPath(hc, masks, id, prof); err != nil {
		masks.remove()
		return nil, err
	}
	eg, err := startEgress(ctx, cfg, id)
	if err != nil {
		masks.remove()
		return nil, err
	}
	eg.apply(ccfg, hc)
	s := &dockerSession{rt: d, id: id, cfg: cfg, masks: masks, egress: eg, info: sandbox.Info{SessionID: id, Image: cfg.Image, ImageID: img.ID, Runtime: cfg.Runtime, User: ccfg.User, Masked: len(masks.entries)}}
	d.track(s)
	// Not ended with ctx (the engine's own deadline still bounds it): an
	// engine that received the create makes the container even if the
	// client hangs up mid-request, and it could land after the label
	// sweep below, outliving the session (seen: an interrupted batch
	// left one container behind). Completed, it is removed by its id.
	resp, err := d.eng.ContainerCreate(context.WithoutCancel(ctx), ccfg, hc, nil, nil, "agentbox-"+id[:12])
	if err != nil {
		// The engine may have created it even though the call failed (the
		// request was cancelled mid-flight): remove it by its label.
		d.removeSession(context.WithoutCancel(ctx), id)
		masks.remove()
		d.untrack(s)
		eg.stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrClosed, context.Cause(ctx))
		}
		if cfg.Runtime != "" && strings.Contains(strings.ToLower(err.Error()), "runtime") {
			return nil, fmt.Errorf("%w: the engine has no OCI runtime %q (sandbox.runtime in the policy): install and register it with the engine (gVisor: runsc), or set runtime: \"\"", sandbox.ErrUnavailable, cfg.Runtime)
		}
		return nil, fmt.Errorf("%w: creating the container: %w", sandbox.ErrUnavailable, err)
	}
	s.setContainerID(resp.ID)
	if ctx.Err() != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%w: %w", sandbox.ErrClosed, context.Cause(ctx))
	}
	if len(resp.Warnings) > 0 {
		// The engine accepted the container but could not apply part of
		// its configuration (typically a limit): refuse to run unguarded.
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%w: the engine could not apply the sandbox configuration (%s); agentbox does not run unguarded — see agentbox doctor", sandbox.ErrUnavailable, strings.Join(resp.Warnings, "; "))
	}
	if s.closed.Load() {
		// CloseAll ran while the container was being created.
		d.removeSession(context.WithoutCancel(ctx), id)
		masks.remove()
		return nil, fmt.Errorf("%w: the runtime was shut down while the sandbox started", sandbox.ErrClosed)
	}
	if err := eg.fillTrust(ctx, d.eng, resp.ID); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := s.connect(ctx); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func checkConfig(cfg *sandbox.Config) error {
	if cfg.SessionID != "" && !sandbox.ValidID(cfg.SessionID) {
		return fmt.Errorf("%w: session id %q: want 12 to 64 hex digits", sandbox.ErrConfig, cfg.SessionID)
	}
	if cfg.Image == "" {
		cfg.Image = sandbox.DefaultImage
	}
	cfg.Image = sandbox.ImageRef(cfg.Image)
	ws, err := sandbox.ResolveWorkspace(cfg.Workspace)
	if err != nil {
		return err
	}
	cfg.Workspace = ws
	switch cfg.WorkspaceMode {
	case "":
		cfg.WorkspaceMode = sandbox.WorkspaceRW
	case sandbox.WorkspaceRW, sandbox.WorkspaceRO:
	default:
		return fmt.Errorf("%w: workspace mode %q: want rw or ro", sandbox.ErrConfig, cfg.WorkspaceMode)
	}
	switch cfg.Network {
	case "":
		cfg.Network = sandbox.NetworkNone
	case sandbox.NetworkNone, sandbox.NetworkProxy, sandbox.NetworkOpen:
	default:
		return fmt.Errorf("%w: network %q: want none, proxy or open", sandbox.ErrConfig, cfg.Network)
	}
	if err := cfg.DefaultLimits(); err != nil {
		return err
	}
	if cfg.Enforce.Heartbeat == 0 {
		// The executor's dead man's switch: it kills everything within
		// three intervals of losing this process.
		cfg.Enforce.Heartbeat = DefaultHeartbeat
	}
	if cfg.Runtime == GVisorRuntime {
		// gVisor cannot answer ENOSYS from the profile (see
		// seccompProfile): the executor's own filter does.
		cfg.Enforce.SetIDFilter = true
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = sandbox.DefaultOutputCap
	}
	if cfg.User == "" {
		cfg.User = sandbox.DefaultUser(cfg.Workspace)
	}
	return nil
}

func (d *Runtime) track(s *dockerSession)   { d.live.Add(s.id, s) }
func (d *Runtime) untrack(s *dockerSession) { d.live.Remove(s.id) }

// CloseAll removes every container this runtime started that is still
// open. The CLI calls it on SIGINT/SIGTERM.
func (d *Runtime) CloseAll(ctx context.Context) error {
	err := d.live.CloseAll(ctx)
	d.Sweep(ctx)
	return err
}

// DefaultHeartbeat is how often the host pings the executor by default;
// the executor kills every process after three silent intervals.
const DefaultHeartbeat = 2 * time.Second
