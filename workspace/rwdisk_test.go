package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedDiskBound: an rw session's upper layer sits on a
// size-bounded filesystem: writing past the bound fails in the sandbox
// with "No space left on device", the session goes on (a small write
// after it works, and both are promoted), a held file is still kept for
// review off the image, the host's disk holds no more than the bound, and
// the header and the end say the bound.
func TestStagedDiskBound(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the bound needs root (a loop-mounted image)")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4")
	}
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Store{Dir: filepath.Join(base, "store")}, ws, CopyOptions{Session: "0123456789abcdef0c01", DiskBytes: 8 << 20, DiskRequired: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Describe(), "disk bound: 8 MiB") {
		t.Errorf("header: %s", l.Describe())
	}
	merged, un := mountOverlay(t, l.Copy)
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(merged, "big"), "bs=1M", "count=20").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left on device") {
		t.Fatalf("dd past the bound: %v %s", err, out)
	}
	sh(t, merged, `rm big && echo small > small.txt && echo 'echo pwned' > .envrc && dd if=/dev/zero of=big bs=1M count=20 2>/dev/null || true`)
	cp, err := l.AfterCall(context.Background(), "call-1")
	if err != nil {
		t.Fatal(err)
	}
	if heldRules(cp)[".envrc"] == "" || readOr(filepath.Join(l.StageDir(), "held", "1", ".envrc")) != "echo pwned\n" {
		t.Errorf("the held file and its copy for review: %v %q", heldRules(cp), readOr(filepath.Join(l.StageDir(), "held", "1", ".envrc")))
	}
	if readOr(filepath.Join(ws, "small.txt")) != "small\n" || exists(filepath.Join(ws, ".envrc")) {
		t.Error("promotion after a full disk")
	}
	fi, err := os.Stat(filepath.Join(ws, "big"))
	if err != nil || fi.Size() > 8<<20 {
		t.Errorf("the workspace got %v bytes of big (bound 8 MiB): %v", fi, err)
	}
	un()
	if _, err := l.Finish("end"); err != nil {
		t.Fatal(err)
	}
	if !l.DiskFull {
		t.Error("the end does not say the bound was reached")
	}
	if exists(filepath.Join(l.Root, "disk.img")) || exists(filepath.Join(l.Root, "disk")) {
		t.Error("the image outlived the session")
	}
}
