package sandbox

import (
	"fmt"
	"os"
	"testing"
)

func TestDefaultUser(t *testing.T) {
	ws := t.TempDir()
	if os.Geteuid() != 0 {
		if got, want := DefaultUser(ws), fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()); got != want {
			t.Fatalf("DefaultUser = %q, want the invoker %q", got, want)
		}
		return
	}
	if got := DefaultUser(ws); got != "0:0" {
		t.Errorf("root's workspace: %q, want 0:0", got)
	}
	if err := os.Chown(ws, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if got := DefaultUser(ws); got != "1234:5678" {
		t.Errorf("another user's workspace: %q, want its owner 1234:5678", got)
	}
}

func TestIsRootUser(t *testing.T) {
	for u, want := range map[string]bool{"0:0": true, "0": true, "root": true, "root:root": true, "0:1000": true, "1000:0": false, "10:10": false, "": false, "01:1": false} {
		if IsRootUser(u) != want {
			t.Errorf("IsRootUser(%q) != %v", u, want)
		}
	}
}
