package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
)

// This file is the one place where engines that speak the Docker API
// differ. Docker is the reference; Podman's Docker-compatible API
// (`podman system service`) is detected from the version endpoint and its
// differences are the named fields of quirks. Nothing else in the backend
// asks which engine it talks to.

// quirks are the differences of one engine from Docker's behaviour.
type quirks struct {
	// Engine names the engine and its version ("Docker 20.10.24",
	// "Podman 4.3.1"); APIVersion is the Docker API version it speaks.
	Engine     string
	APIVersion string
	// Podman is true for Podman's Docker-compatible API.
	Podman bool
	// Rootless is true when the engine runs without root privileges
	// (Podman's rootless mode): limits then need cgroup v2 delegation.
	Rootless bool

	// explicitUlimits: Docker containers inherit the engine daemon's
	// rlimits; Podman asks runc for rlimits of its own choosing (nproc and
	// nofile at the kernel maximum, or the service's hard limit), which
	// runc cannot set where the service lacks CAP_SYS_RESOURCE, so the
	// container fails to initialise at attach ("error setting rlimit type
	// 6": HTTP 409). nproc and nofile are therefore always given.
	explicitUlimits bool
	// ignoresRuntime: Podman's compatible API (4.3) ignores
	// HostConfig.Runtime and runs its own default OCI runtime, which would
	// silently turn `sandbox.runtime: runsc` into runc. A sandbox that asks
	// for a runtime is therefore refused on Podman (fail closed).
	ignoresRuntime bool
	// seccompAsPath: Podman's compatible API reads `seccomp=` in
	// SecurityOpt as a file path, where Docker takes the profile itself
	// (inline JSON gives "file name too long"); the profile is written to
	// the session's host directory and named by path.
	seccompAsPath bool
	// noVolumeOverlay: Podman's compatible API (4.3) does not honour a
	// local volume's overlay options: the staged workspace volume mounts
	// as an empty directory, and the sandbox's writes vanish. A sandbox
	// whose workspace is such an overlay (rw staging, an overlay copy) is
	// therefore refused on Podman (fail closed: never an empty /workspace
	// in place of the user's).
	noVolumeOverlay bool
}

// errNoVersion: the engine behind a wrapper has no version endpoint.
var errNoVersion = errors.New("the engine has no version endpoint")

// versioner is the part of the Docker client that reads the version
// endpoint; an Engine without it is taken to be Docker.
type versioner interface {
	ServerVersion(ctx context.Context) (types.Version, error)
}

// detectQuirks asks the engine what it is.
func detectQuirks(ctx context.Context, eng Engine) (quirks, error) {
	vr, ok := eng.(versioner)
	if !ok {
		return quirks{Engine: "Docker"}, nil
	}
	v, err := vr.ServerVersion(ctx)
	if errors.Is(err, errNoVersion) {
		return quirks{Engine: "Docker"}, nil
	}
	if err != nil {
		return quirks{}, fmt.Errorf("reading the engine version: %w", err)
	}
	return quirksOf(v), nil
}

// quirksOf maps a version answer to the engine's quirks.
func quirksOf(v types.Version) quirks {
	q := quirks{Engine: "Docker " + v.Version, APIVersion: v.APIVersion}
	podman := strings.Contains(strings.ToLower(v.Platform.Name), "podman")
	for _, c := range v.Components {
		if strings.EqualFold(c.Name, "Podman Engine") {
			podman = true
			q.Engine = "Podman " + c.Version
		}
	}
	if !podman {
		return q
	}
	if q.Engine == "Docker "+v.Version {
		q.Engine = "Podman " + v.Version
	}
	q.Podman = true
	q.explicitUlimits = true
	q.ignoresRuntime = true
	q.seccompAsPath = true
	q.noVolumeOverlay = true
	return q
}

// String is what doctor prints: "Podman 4.3.1 (Docker API 1.41)".
func (q quirks) String() string {
	s := q.Engine
	if q.APIVersion != "" {
		s += " (Docker API " + q.APIVersion + ")"
	}
	if q.Rootless {
		s += ", rootless"
	}
	return s
}

// apply adapts a container spec built for Docker to the engine, or says
// why the engine cannot run it as asked.
func (q quirks) apply(ccfg *container.Config, hc *container.HostConfig) error {
	if q.ignoresRuntime && hc.Runtime != "" {
		return fmt.Errorf("%w: %s's Docker-compatible API ignores the OCI runtime a container asks for, so sandbox.runtime: %s cannot be enforced there; use the Docker engine with %s registered, or set runtime: \"\"", sandbox.ErrUnavailable, q.Engine, hc.Runtime, hc.Runtime)
	}
	if q.noVolumeOverlay {
		for _, m := range hc.Mounts {
			if m.VolumeOptions != nil && m.VolumeOptions.DriverConfig != nil && m.VolumeOptions.DriverConfig.Options["type"] == "overlay" {
				return fmt.Errorf("%w: %s's Docker-compatible API mounts the staged workspace overlay as an empty directory, so a staged workspace (rw, or an overlay copy) cannot run there; use the Docker engine, or --workspace-mode copy with AGENTBOX_OVERLAY=off (a real copy)", sandbox.ErrUnavailable, q.Engine)
			}
		}
	}
	if q.explicitUlimits {
		hc.Ulimits = withUlimit(hc.Ulimits, "nofile")
		hc.Ulimits = withUlimit(hc.Ulimits, "nproc")
	}
	return nil
}

// seccompPath points the spec's seccomp option at a file holding the
// profile, for an engine that takes a path (see seccompAsPath).
func (q quirks) seccompPath(hc *container.HostConfig, masks *fileMasks, id, profile string) error {
	if !q.seccompAsPath {
		return nil
	}
	for i, o := range hc.SecurityOpt {
		if strings.HasPrefix(o, "seccomp=") {
			p, err := masks.file(id, "seccomp.json", []byte(profile))
			if err != nil {
				return err
			}
			hc.SecurityOpt[i] = "seccomp=" + p
		}
	}
	return nil
}

// podmanUlimit is the value given for an rlimit the spec leaves to the
// engine. Podman's own choice (the kernel maximum, or the service's hard
// limit) fails wherever the service cannot raise it; a fixed value below
// every common default hard limit cannot. RLIMIT_NPROC counts the uid's
// processes host-wide, so 4096 leaves room beside the host user's own.
const podmanUlimit = 4096

// withUlimit adds limit name at podmanUlimit unless the spec sets it.
func withUlimit(ls []*units.Ulimit, name string) []*units.Ulimit {
	for _, l := range ls {
		if l.Name == name {
			return ls
		}
	}
	return append(ls, &units.Ulimit{Name: name, Soft: podmanUlimit, Hard: podmanUlimit})
}

// quirks returns the engine's quirks, asking it once per Runtime.
func (d *Runtime) quirks(ctx context.Context) (quirks, error) {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	if d.q != nil {
		return *d.q, nil
	}
	q, err := detectQuirks(ctx, d.eng)
	if err != nil {
		return q, err
	}
	d.q = &q
	return q, nil
}

// HonorsRuntime reports whether the engine runs the OCI runtime a
// container asks for (Podman's compatible API does not: ignoresRuntime).
func (d *Runtime) HonorsRuntime(ctx context.Context) bool {
	q, err := d.quirks(ctx)
	return err == nil && !q.ignoresRuntime
}
