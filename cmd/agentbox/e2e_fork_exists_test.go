package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestForkRefusesExistingDir: `agentbox fork SESSION CALL .` run inside a
// non-empty directory, and `fork --dir DIR SESSION CALL -- TASK` with a
// non-empty existing DIR, both refuse (exit 2) with a message that says
// the directory exists and to name a new one, start no session, and leave
// the directory and its parent byte-identical (no temporary directory of
// the fork's left beside it); so does a fork into the home directory.
func TestForkRefusesExistingDir(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeTestFile(t, filepath.Join(ws, "a.txt"), "v0\n")
	log := filepath.Join(dir, "audit.jsonl")
	ab := abCmd{fullEnv: baseEnv(t)}
	script := scriptFile(t, "  - tool_calls:\n      - {name: write_file, args: {path: a.txt, content: \"v1\\n\"}}\n")
	r := ab.run(t, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", script, "edit")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	sess := sessionOf(t, r.stderr)

	// The user's directory: files, an executable, a link, a subdirectory.
	parent := t.TempDir()
	mine := filepath.Join(parent, "mine")
	writeTestFile(t, filepath.Join(mine, "notes.txt"), "the user's notes\n")
	writeTestFile(t, filepath.Join(mine, "sub", "a.txt"), "the user's a.txt\n")
	writeFile(t, filepath.Join(mine, "run.sh"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink("notes.txt", filepath.Join(mine, "l")); err != nil {
		t.Fatal(err)
	}
	before := treeDigest(t, parent)
	for _, c := range []struct {
		name string
		ab   abCmd
		args []string
	}{
		{"dot", abCmd{dir: mine, fullEnv: ab.fullEnv}, []string{"fork", "--audit", log, sess, "1", "."}},
		{"dot with a task", abCmd{dir: mine, fullEnv: ab.fullEnv}, []string{"fork", "--no-memory", "--audit", log, "--script", script, sess, "1", ".", "go", "on"}},
		{"--dir", ab, []string{"fork", "--no-memory", "--audit", log, "--script", script, "--dir", mine, sess, "1", "--", "go", "on"}},
	} {
		f := c.ab.run(t, c.args...)
		if f.code != 2 || !strings.Contains(f.stderr, "exists") || !strings.Contains(f.stderr, mine) || !strings.Contains(f.stderr, "does not exist") {
			t.Errorf("fork into the existing %s (%s): %d %q", mine, c.name, f.code, f.stderr)
		}
		if strings.Contains(f.stderr, "agentbox apply") || sessionRe.MatchString(f.stderr) {
			t.Errorf("fork into the existing %s (%s) started a session: %q", mine, c.name, f.stderr)
		}
		if after := treeDigest(t, parent); after != before {
			t.Fatalf("fork (%s) changed the user's directory or its parent:\nbefore:\n%s\nafter:\n%s", c.name, before, after)
		}
	}
	// ~ (the home directory, where the default audit log and the
	// sessions' state live): refused as existing, first.
	home := strings.TrimPrefix(ab.fullEnv[0], "HOME=")
	hb := treeDigest(t, home)
	if f := ab.run(t, "fork", sess, "1", home); f.code != 2 || !strings.Contains(f.stderr, "exists") || !strings.Contains(f.stderr, home) {
		t.Errorf("fork into the home directory: %d %q", f.code, f.stderr)
	}
	if ha := treeDigest(t, home); ha != hb {
		t.Errorf("fork into the home directory changed it:\nbefore:\n%s\nafter:\n%s", hb, ha)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v1\n" {
		t.Errorf("the session's workspace changed: %q", b)
	}
}
