package ocsf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestExportRealSessionFileEvents: a session of the real binary writes two
// files; `agentbox audit export --format ocsf` makes each one File System
// Activity Create with the SHA-256 of what was written (once: session_end
// repeats the staged checkpoint's files and adds no event), and every
// event validates against the official schema.
func TestExportRealSessionFileEvents(t *testing.T) {
	testutil.RequireDocker(t)
	s := loadSchema(t)
	home, ws := t.TempDir(), t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH"), "NO_COLOR=1", testutil.ManifestEnv()}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
		cmd.Env, cmd.Dir = env, ws
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("agentbox %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	run("exec", "-w", ws, "--audit", log, "--", "echo hi > a.txt; mkdir -p sub; echo there > sub/b.txt")
	out := run("audit", "export", log, "--format", "ocsf")
	got := map[string]string{} // path -> sha256 of the file events
	n := 0
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		for _, e := range s.validate(ev) {
			t.Errorf("event %d (%v %v): %s", i+1, ev["class_name"], ev["activity_name"], e)
		}
		if ev["class_uid"] != 1001.0 || get(ev, "unmapped.agentbox.change") == nil {
			continue
		}
		n++
		hashes, _ := get(ev, "file.hashes").([]any)
		if len(hashes) != 1 || ev["activity_name"] != "Create" {
			t.Errorf("file event %s: activity %v, hashes %v", l, ev["activity_name"], hashes)
			continue
		}
		p, _ := get(ev, "file.path").(string)
		got[p], _ = hashes[0].(map[string]any)["value"].(string)
	}
	if n != 2 || got["a.txt"] != sha([]byte("hi\n")) || got["sub/b.txt"] != sha([]byte("there\n")) {
		t.Errorf("%d file events %v, want a.txt and sub/b.txt once each with their SHA-256:\n%s", n, got, out)
	}
}
