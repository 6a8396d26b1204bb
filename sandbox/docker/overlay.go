package docker

import (
	"fmt"
	"maps"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// overlayOptions are the overlay mount options of a copy-on-write
// workspace. userxattr keeps overlay's markers (opaque directories) in
// user.* attributes, which agentbox can read without privileges; it also
// turns off redirects and metacopy, so the upper directory alone is the
// exact change set (whole files, whiteouts, opaque directories).
const overlayOptions = "userxattr,redirect_dir=nofollow,metacopy=off,index=off,nosuid,nodev"

// applyOverlay replaces the workspace mount by an anonymous local volume
// that the engine mounts as an overlay: cfg.Workspace the read-only lower
// layer (through cfg.Overlay.Lower, a link under a safe name, when its
// path holds a character the options cannot carry), cfg.Overlay.Upper
// the upper one. The engine (dockerd, root)
// mounts it, so this works for non-root users; the volume goes with the
// container (RemoveVolumes on every path). It carries the container's
// labels (session and owner identity) so that gc finds it when the
// container was removed without it.
func applyOverlay(cfg sandbox.Config, hc *container.HostConfig, labels map[string]string) error {
	if cfg.Overlay == nil {
		return nil
	}
	lower := cfg.Overlay.Lower
	if lower == "" {
		lower = cfg.Workspace
	}
	for _, p := range []string{lower, cfg.Overlay.Upper, cfg.Overlay.Work} {
		if p == "" || strings.ContainsAny(p, ",:\\=") {
			return fmt.Errorf("%w: the path %q cannot be an overlay layer (empty, or holds , : \\ or =); use a real copy (AGENTBOX_OVERLAY=off)", sandbox.ErrConfig, p)
		}
	}
	m := mount.Mount{
		Type:   mount.TypeVolume,
		Target: sandbox.WorkspaceDir,
		VolumeOptions: &mount.VolumeOptions{Labels: maps.Clone(labels), DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type":   "overlay",
			"device": "overlay",
			"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,%s",
				lower, cfg.Overlay.Upper, cfg.Overlay.Work, overlayOptions),
		}}},
	}
	for i, old := range hc.Mounts {
		if old.Target == sandbox.WorkspaceDir {
			hc.Mounts[i] = m
			return nil
		}
	}
	hc.Mounts = append([]mount.Mount{m}, hc.Mounts...)
	return nil
}
