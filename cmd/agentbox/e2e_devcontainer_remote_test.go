package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A devcontainer Dockerfile on a backend that cannot build the images its
// sandboxes run (Kubernetes) is refused before anything connects, saying
// what to do instead, for a session and for a batch task alike.
func TestDevcontainerDockerfileRefusedOnKubernetes(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".devcontainer", "Dockerfile"), "FROM agentbox/base:latest\n", 0o644)
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{"build": {"dockerfile": "Dockerfile"}}`, 0o644)
	env := []string{"KUBECONFIG=" + filepath.Join(ws, "no-such-kubeconfig")}
	r := agentbox(t, env, "exec", "--backend", "kubernetes", "--devcontainer", "--workspace", ws, "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "--devcontainer with a Dockerfile on --backend kubernetes") || !strings.Contains(r.stderr, "name it as devcontainer.json's image") {
		t.Errorf("exec: %d %q", r.code, r.stderr)
	}
	tasks := writeFile(t, filepath.Join(t.TempDir(), "tasks.yaml"), "tasks:\n  - {id: dc, task: t, workspace: "+ws+", devcontainer: true}\n", 0o644)
	r = agentbox(t, env, "batch", tasks, "--backend", "kubernetes", "--output", filepath.Join(t.TempDir(), "out"))
	if r.code != 2 || !strings.Contains(r.stderr, "task dc: --devcontainer with a Dockerfile on --backend kubernetes") {
		t.Errorf("batch: %d %q", r.code, r.stderr)
	}
}
