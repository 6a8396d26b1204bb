package docker

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"
)

func TestQuirksOf(t *testing.T) {
	var pv types.Version
	pv.Platform.Name = "linux/amd64/debian-12"
	pv.Components = []types.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}
	pv.Version, pv.APIVersion = "4.3.1", "1.41"
	q := quirksOf(pv)
	if !q.Podman || !q.explicitUlimits || !q.ignoresRuntime || q.String() != "Podman 4.3.1 (Docker API 1.41)" {
		t.Errorf("podman: %+v %q", q, q)
	}
	d := quirksOf(types.Version{Version: "20.10.24", APIVersion: "1.41", Components: []types.ComponentVersion{{Name: "Engine", Version: "20.10.24"}}})
	if d.Podman || d.explicitUlimits || d.ignoresRuntime || d.String() != "Docker 20.10.24 (Docker API 1.41)" {
		t.Errorf("docker: %+v %q", d, d)
	}
	hc := &container.HostConfig{Resources: container.Resources{Ulimits: []*units.Ulimit{{Name: "nofile", Soft: 10, Hard: 10}}}}
	if err := q.apply(&container.Config{}, hc); err != nil || len(hc.Ulimits) != 2 || hc.Ulimits[0].Soft != 10 || hc.Ulimits[1].Name != "nproc" {
		t.Errorf("podman ulimits: %v %+v", err, hc.Ulimits)
	}
	if err := q.apply(&container.Config{}, &container.HostConfig{Runtime: "runsc"}); err == nil {
		t.Errorf("podman accepted an OCI runtime it would ignore")
	}
	// A staged workspace (the overlay volume) is refused on Podman, whose
	// API would mount it empty; Docker takes it.
	staged := func() *container.HostConfig {
		return &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/workspace",
			VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "overlay"}}}}}}
	}
	if err := q.apply(&container.Config{}, staged()); !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "empty directory") {
		t.Errorf("podman accepted a staged workspace overlay: %v", err)
	}
	if err := d.apply(&container.Config{}, staged()); err != nil {
		t.Errorf("docker refused a staged workspace overlay: %v", err)
	}
}
