package kubernetes

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// DefaultDiskBytes bounds the workspace in the pod when the policy says
// nothing (the policy's own default is the same).
const DefaultDiskBytes = int64(2 << 30)

// fallbackUID is the uid a sandbox runs as when the invoker is root: the
// pod must run as non-root.
const fallbackUID = 1000

// ErrRWWorkspace is the refusal of rw on the user's own workspace.
var errRWWorkspace = fmt.Errorf("%w: the kubernetes backend never mounts the host's workspace, so it cannot work on it in place (rw); use the copy workspace mode: the pod works on a copy and its changes come back for review via `agentbox changes` / `agentbox apply`", sandbox.ErrConfig)

// checkConfig fills defaults and refuses what a pod cannot enforce.
func checkConfig(cfg *sandbox.Config) error {
	if cfg.SessionID != "" && !sandbox.ValidID(cfg.SessionID) {
		return fmt.Errorf("%w: session id %q: want 12 to 64 hex digits", sandbox.ErrConfig, cfg.SessionID)
	}
	if cfg.Image == "" || cfg.Image == sandbox.DefaultImage {
		cfg.Image = DefaultImage // the base image has no executor
	}
	ws, err := sandbox.ResolveWorkspace(cfg.Workspace)
	if err != nil {
		return err
	}
	cfg.Workspace = ws
	switch cfg.WorkspaceMode {
	case "", sandbox.WorkspaceRW:
		cfg.WorkspaceMode = sandbox.WorkspaceRW
		if !cfg.WorkspaceCopy {
			return errRWWorkspace
		}
	case sandbox.WorkspaceRO:
	default:
		return fmt.Errorf("%w: workspace mode %q: want rw (on a copy) or ro", sandbox.ErrConfig, cfg.WorkspaceMode)
	}
	if cfg.Overlay != nil {
		return fmt.Errorf("%w: the kubernetes backend works on a real copy of the workspace, not an overlay (internal: make the copy with NoOverlay)", sandbox.ErrConfig)
	}
	switch cfg.Network {
	case "":
		cfg.Network = sandbox.NetworkNone
	case sandbox.NetworkNone, sandbox.NetworkOpen:
	case sandbox.NetworkProxy:
		// Egress travels over the executor's channel to the host-side
		// proxy; the pod itself is isolated as for none.
		if cfg.Egress == nil {
			return fmt.Errorf("%w: network: proxy needs the host-side proxy (sandbox.Config.Egress is nil; internal error) — refusing to start", sandbox.ErrConfig)
		}
	default:
		return fmt.Errorf("%w: network %q: want none, proxy or open", sandbox.ErrConfig, cfg.Network)
	}
	if len(cfg.TrustPEM) > 0 && cfg.Network != sandbox.NetworkProxy {
		return fmt.Errorf("%w: a session CA (secrets, network.rules) needs network: proxy; refusing to start", sandbox.ErrConfig)
	}
	if err := cfg.DefaultLimits(); err != nil {
		return err
	}
	if cfg.DiskBytes <= 0 {
		cfg.DiskBytes = DefaultDiskBytes
	}
	if cfg.Enforce.Heartbeat == 0 {
		cfg.Enforce.Heartbeat = DefaultHeartbeat
	}
	// The node's RuntimeDefault profile lets a process set set-id bits:
	// the executor filters them out itself.
	cfg.Enforce.SetIDFilter = true
	// Programs known by content; the manifest is made at a session's
	// hello and cached under the image's content id, which is known once
	// the pod runs (see manifestKey).
	cfg.Enforce.ByContent = true
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = sandbox.DefaultOutputCap
	}
	return nil
}

// podUser is the non-root uid and gid the pod runs as: sandbox.user when
// it names a non-root numeric uid, else the invoker's, else 1000.
func podUser(user string) (uid, gid int64, err error) {
	if user == "" {
		uid, gid = int64(os.Getuid()), int64(os.Getgid())
		if uid == 0 {
			return fallbackUID, fallbackUID, nil
		}
		return uid, gid, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err = strconv.ParseInt(u, 10, 32)
	if err != nil || uid < 0 {
		return 0, 0, fmt.Errorf("%w: sandbox.user %q: the kubernetes backend needs a numeric uid[:gid]", sandbox.ErrConfig, user)
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.ParseInt(g, 10, 32); err != nil || gid < 0 {
			return 0, 0, fmt.Errorf("%w: sandbox.user %q: the kubernetes backend needs a numeric uid[:gid]", sandbox.ErrConfig, user)
		}
	}
	if uid == 0 {
		return fallbackUID, fallbackUID, nil // pods run as non-root
	}
	return uid, gid, nil
}
