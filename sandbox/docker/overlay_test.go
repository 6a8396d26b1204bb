package docker

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/mount"
)

// TestOverlayMountSpec: a copy's workspace is an engine-mounted overlay
// volume in place of the bind mount; paths overlay options cannot carry
// are refused.
func TestOverlayMountSpec(t *testing.T) {
	cfg := sandbox.Config{Workspace: "/ws", Overlay: &sandbox.Overlay{Upper: "/st/upper", Work: "/st/work"}}
	ccfg, hc := containerSpec(cfg, "/exe", "0123456789abcdef", map[string]string{LabelOwner: "1:2"}, "h", "{}", nil)
	if err := applyOverlay(cfg, hc, ccfg.Labels); err != nil {
		t.Fatal(err)
	}
	var ws *mount.Mount
	for i := range hc.Mounts {
		if hc.Mounts[i].Target == sandbox.WorkspaceDir {
			if ws != nil {
				t.Fatal("two workspace mounts")
			}
			ws = &hc.Mounts[i]
		}
	}
	if ws == nil || ws.Type != mount.TypeVolume || ws.Source != "" || ws.VolumeOptions == nil {
		t.Fatalf("workspace mount %+v", ws)
	}
	// The volume carries the owner identity: gc finds it without its container.
	if l := ws.VolumeOptions.Labels; l[LabelOwner] != "1:2" || l[LabelSession] != "0123456789abcdef" {
		t.Errorf("volume labels %v", l)
	}
	o := ws.VolumeOptions.DriverConfig.Options
	if o["type"] != "overlay" || !strings.HasPrefix(o["o"], "lowerdir=/ws,upperdir=/st/upper,workdir=/st/work,userxattr") ||
		!strings.Contains(o["o"], "nosuid,nodev") {
		t.Errorf("options %v", o)
	}
	bad := cfg
	bad.Workspace = "/a,b"
	if err := applyOverlay(bad, hc, nil); !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("a comma in a layer path: %v", err)
	}
	// A workspace path the options cannot carry goes through its link.
	linked := bad
	linked.Overlay = &sandbox.Overlay{Upper: "/st/upper", Work: "/st/work", Lower: "/st/lower"}
	linked.Workspace = "/a=b,lowerdir=/etc:x"
	_, hc = containerSpec(linked, "/exe", "0123456789abcdef", nil, "h", "{}", nil)
	if err := applyOverlay(linked, hc, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range hc.Mounts {
		if m.Target == sandbox.WorkspaceDir {
			if o := m.VolumeOptions.DriverConfig.Options["o"]; !strings.HasPrefix(o, "lowerdir=/st/lower,upperdir=") || strings.Contains(o, "/etc") {
				t.Errorf("options through the link: %s", o)
			}
		}
	}
	linked.Overlay.Lower = "/st,lower"
	if err := applyOverlay(linked, hc, nil); !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("a comma in the link's path: %v", err)
	}
}
