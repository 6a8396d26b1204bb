package workspace_test

import (
	"os"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
	"github.com/agentbox/agentbox/workspace/workspacetest"
)

// Every shape passes the one contract suite for workspace.Workspace (the
// overlay shapes need root and a kernel overlay; without them their
// cases are skipped).
func TestShapesContract(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape workspace.Shape
		new   workspacetest.New
	}{
		{"InPlace", workspace.ShapeInPlace, func(t *testing.T, src, _ string) workspace.Workspace {
			return workspace.NewInPlace(src, sandbox.WorkspaceRW)
		}},
		{"Staged", workspace.ShapeStaged, func(t *testing.T, src, store string) workspace.Workspace {
			w, err := workspace.NewStaged(workspace.Store{Dir: store}, src, workspace.CopyOptions{Session: sandbox.NewID()}, nil)
			if err != nil {
				t.Skipf("no staging here: %v", err)
			}
			return w
		}},
		{"StagedBounded", workspace.ShapeStaged, func(t *testing.T, src, store string) workspace.Workspace {
			if os.Geteuid() != 0 {
				t.Skip("a bounded upper layer is mounted by root")
			}
			w, err := workspace.NewStaged(workspace.Store{Dir: store}, src, workspace.CopyOptions{Session: sandbox.NewID(), DiskBytes: 64 << 20, DiskRequired: true}, nil)
			if err != nil {
				t.Skipf("no bounded staging here: %v", err)
			}
			return w
		}},
		{"OverlayCopy", workspace.ShapeOverlayCopy, newCopied(workspace.CopyOptions{}, false)},
		{"OverlayCopyBounded", workspace.ShapeOverlayCopy, newCopied(workspace.CopyOptions{DiskBytes: 64 << 20, DiskRequired: true}, false)},
		{"RealCopy", workspace.ShapeRealCopy, newCopied(workspace.CopyOptions{NoOverlay: true}, false)},
		{"PulledCopy", workspace.ShapePulledCopy, newCopied(workspace.CopyOptions{NoOverlay: true, NoOverlayWhy: "the copy travels over the channel"}, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workspacetest.Run(t, func(t *testing.T, src, store string) workspace.Workspace {
				w := tc.new(t, src, store)
				if w.Shape() != tc.shape {
					t.Skipf("made a %s, not a %s, here", w.Shape(), tc.shape)
				}
				return w
			})
		})
	}
}

// newCopied makes copies with o (pulled: a real copy the sandbox holds
// itself).
func newCopied(o workspace.CopyOptions, pulled bool) workspacetest.New {
	return func(t *testing.T, src, store string) workspace.Workspace {
		if o.DiskBytes > 0 && os.Geteuid() != 0 {
			t.Skip("a bounded upper layer is mounted by root")
		}
		o.Session = sandbox.NewID()
		w, err := workspace.NewCopied(workspace.Store{Dir: store}, src, o, pulled)
		if err != nil {
			t.Skipf("no such copy here: %v", err)
		}
		return w
	}
}
