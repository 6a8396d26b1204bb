package workspace

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
)

// TestUnsafeWorkspacePathStaged: a workspace whose path would rewrite
// overlay's mount options ("a=b,lowerdir=/etc:x") is staged through a
// link under a safe name: the overlay shows exactly the workspace
// (nothing of /etc), a write through it is promoted into the workspace,
// and Finish removes the link without touching what it points to.
func TestUnsafeWorkspacePathStaged(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "a=b,lowerdir=/etc:x")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Store{Dir: filepath.Join(base, "store")}, ws, CopyOptions{Session: "0123456789abcdef0b01"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg sandbox.Config
	l.Configure(&cfg)
	lower := cfg.Overlay.Lower
	if lower == "" || strings.ContainsAny(lower, overlayUnsafe) || cfg.Workspace != ws {
		t.Fatalf("overlay lower %q for workspace %q", lower, cfg.Workspace)
	}
	if got, err := filepath.EvalSymlinks(lower); err != nil || got != ws {
		t.Fatalf("the link resolves to %q (%v), want the workspace", got, err)
	}
	merged := mountKernelOverlay(t, lower, l.Upper())
	if got := names(t, merged); strings.Join(got, " ") != "sub" {
		t.Errorf("the overlay shows %v, want exactly the workspace (sub)", got)
	}
	for _, p := range []string{"passwd", "hostname", "x"} {
		if exists(filepath.Join(merged, p)) {
			t.Errorf("%s is visible through the overlay", p)
		}
	}
	if err := os.WriteFile(filepath.Join(merged, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := l.AfterCall(context.Background(), "call-1")
	if err != nil || cp == nil {
		t.Fatalf("promotion: %v %v", cp, err)
	}
	if got := readOr(filepath.Join(ws, "new.txt")); got != "new\n" {
		t.Errorf("workspace new.txt = %q", got)
	}
	if _, err := l.Finish("end"); err != nil {
		t.Fatal(err)
	}
	if exists(lower) {
		t.Error("Finish left the link")
	}
	if readOr(filepath.Join(ws, "sub", "f")) != "f" || readOr(filepath.Join(ws, "new.txt")) != "new\n" {
		t.Error("Finish touched the workspace")
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
