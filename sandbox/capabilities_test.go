package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestCapabilitiesMode(t *testing.T) {
	mounts := Capabilities{Backend: "a", Workspace: WorkspaceMount}
	none := Capabilities{Backend: "b", Workspace: WorkspaceChannel}
	for _, tc := range []struct {
		caps     Capabilities
		want     WorkspaceMode
		explicit bool
		got      WorkspaceMode
		err      bool
	}{
		{mounts, "", false, WorkspaceRW, false},
		{mounts, WorkspaceRW, true, WorkspaceRW, false},
		{mounts, WorkspaceCopy, true, WorkspaceCopy, false},
		{none, WorkspaceRW, false, WorkspaceCopy, false},
		{none, "", false, WorkspaceCopy, false},
		{none, WorkspaceRO, true, WorkspaceRO, false},
		{none, WorkspaceCopy, true, WorkspaceCopy, false},
		{none, WorkspaceRW, true, "", true},
	} {
		got, err := tc.caps.Mode(tc.want, tc.explicit)
		if got != tc.got || (err != nil) != tc.err {
			t.Errorf("%s.Mode(%q, %v) = %q, %v", tc.caps.Backend, tc.want, tc.explicit, got, err)
		}
		if err != nil && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "the b backend") || strings.Contains(err.Error(), "--")) {
			t.Errorf("refusal %q: want ErrConfig naming the backend, no CLI flag", err)
		}
	}
	if c := CapabilitiesOf(nil); !c.Workspace.Mounts() {
		t.Errorf("a runtime that declares nothing: %+v, want host mounts", c)
	}
}
