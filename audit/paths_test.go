package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if p, _ := DefaultPath(); p != "/xdg/state/agentbox/audit.jsonl" {
		t.Fatal(p)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.local/state/agentbox/audit.jsonl" {
		t.Fatal(p)
	}
}

func TestCheckOutside(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	outside := filepath.Join(dir, "state")
	os.MkdirAll(outside, 0o700)
	// A symlink outside the workspace that points into it.
	os.Symlink(filepath.Join(ws, "sub"), filepath.Join(dir, "sneaky"))
	for _, c := range []struct {
		log    string
		inside bool
	}{
		{filepath.Join(ws, "audit.jsonl"), true},
		{filepath.Join(ws, "sub", "new", "deeper", "audit.jsonl"), true},
		{ws, true},
		{filepath.Join(dir, "sneaky", "audit.jsonl"), true},
		{filepath.Join(ws, "..", "ws", "a.jsonl"), true},
		{filepath.Join(outside, "audit.jsonl"), false},
		{filepath.Join(dir, "ws2", "audit.jsonl"), false},
		{filepath.Join(dir, "wsx"), false},
	} {
		err := CheckOutside(c.log, ws)
		if (err != nil) != c.inside {
			t.Errorf("%s: inside=%v err=%v", c.log, c.inside, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--audit") {
			t.Errorf("message does not say what to do: %v", err)
		}
	}
	// A relative workspace is resolved against the working directory.
	t.Chdir(ws)
	if err := CheckOutside("audit.jsonl", "."); err == nil {
		t.Error("relative path inside the workspace accepted")
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Setenv(KeyEnv, "")
	if k, err := KeyFromEnv(""); k != nil || err != nil {
		t.Fatal(k, err)
	}
	t.Setenv(KeyEnv, " raw key ")
	if k, _ := KeyFromEnv(""); string(k) != " raw key " {
		t.Fatalf("%q", k)
	}
	f := filepath.Join(t.TempDir(), "key")
	os.WriteFile(f, []byte("  file key\n"), 0o600)
	if k, _ := KeyFromEnv(f); string(k) != "file key" {
		t.Fatalf("%q", k)
	}
	os.Chmod(f, 0o644)
	if _, err := KeyFromEnv(f); err == nil {
		t.Fatal("world-readable key file accepted")
	}
	os.WriteFile(f+"2", []byte("\n"), 0o600)
	if _, err := KeyFromEnv(f + "2"); err == nil {
		t.Fatal("empty key file accepted")
	}
	if _, err := KeyFromEnv(f + "missing"); err == nil {
		t.Fatal("missing key file accepted")
	}
}
