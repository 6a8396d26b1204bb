package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k8sEnv is the environment of a real binary run on the test cluster,
// sharing one state directory (workspace copies) across runs.
func k8sEnv(t *testing.T) []string {
	t.Helper()
	return append(baseEnv(t), "KUBECONFIG="+testutil.Kubeconfig(t), "AGENTBOX_BACKEND=kubernetes")
}

const k8sPolicy = `version: 1
extends: none
commands:
  default: allow
  dynamic: allow
files:
  read:
    allow: ["**"]
    deny: [".env"]
  write:
    allow: ["**"]
    deny: [".git/config"]
`

// Every kind of change a pod makes comes back into the session's copy,
// is reviewed with `agentbox changes` and applied with `agentbox apply`;
// the read-denied file never enters the pod and the write-denied change
// never comes back.
func TestK8sRunChangesApply(t *testing.T) {
	env := k8sEnv(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for p, body := range map[string]string{"edit.txt": "edit\n", "gone.txt": "gone\n", "dir/sub/f.txt": "f\n", "run.sh": "#!/bin/sh\n",
		"keep.txt": "keep\n", ".env": "SECRET=1\n", ".git/config": "[core]\n"} {
		writeTestFile(t, filepath.Join(ws, p), body)
	}
	if err := os.Symlink("keep.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "s.yaml")
	writeTestFile(t, pol, k8sPolicy)
	writeTestFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "ls -A > listing.txt; sed -i s/edit/EDITED/ edit.txt && rm gone.txt && rm -r dir && echo new > new.txt && chmod 755 run.sh && ln -sfn new.txt link && python3 -c 'open(\".git/config\", \"a\").write(\"evil\")'; echo ok"}}
  - tool_calls:
      - {name: write_file, args: {path: written.txt, content: "by write_file\n"}}
  - content: done
`)
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--audit", filepath.Join(dir, "a.jsonl"), "--script", script, "every kind of change")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	m := sessionRe.FindStringSubmatch(r.stderr)
	if m == nil || !strings.Contains(r.stderr, "working on a full copy") && !strings.Contains(r.stderr, "working on a reflinked copy") {
		t.Fatalf("no pending session or copy notice in %q", r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "edit.txt")); string(b) != "edit\n" {
		t.Fatal("the workspace changed before apply")
	}
	st := ab.run(t, "changes", "--stat", m[1])
	for _, want := range []string{"modified edit.txt", "deleted  gone.txt", "deleted  dir/sub/f.txt", "added    new.txt", "mode     run.sh", "link", "written.txt"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("changes --stat lacks %q:\n%s", want, st.stdout)
		}
	}
	if strings.Contains(st.stdout, ".git/config") {
		t.Errorf("a write-denied change came back:\n%s", st.stdout)
	}
	if d := ab.run(t, "changes", m[1]); d.code != 0 || !strings.Contains(d.stdout, "+EDITED") {
		t.Errorf("changes diff: %d %q", d.code, d.stdout)
	}
	if a := ab.run(t, "apply", m[1]); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(ws, p)); return string(b) }
	if read("edit.txt") != "EDITED\n" || read("new.txt") != "new\n" || read("written.txt") != "by write_file\n" || read(".git/config") != "[core]\n" || read(".env") != "SECRET=1\n" {
		t.Error("contents not applied as expected")
	}
	for _, p := range []string{"gone.txt", "dir"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s not removed", p)
		}
	}
	if l := read("listing.txt"); strings.Contains(l, ".env") || !strings.Contains(l, "edit.txt") {
		t.Errorf("the pod's workspace listing: %q (the read-denied .env must not be there)", l)
	}
	if fi, _ := os.Stat(filepath.Join(ws, "run.sh")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Error("mode not applied")
	}
	if l, _ := os.Readlink(filepath.Join(ws, "link")); l != "new.txt" {
		t.Errorf("symlink not applied: %q", l)
	}
	// The change was undone in the pod (the executor's effects check) and
	// is one alarm in the audit log; it does not come back as a second.
	b, _ := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	if n := strings.Count(string(b), `"path":".git/config"`); n != 1 || !strings.Contains(string(b), `"event":"alarm"`) {
		t.Errorf("%d alarm(s) for .git/config in the audit log, want 1", n)
	}
	// rw asked for explicitly is refused with the way to do it.
	if r := ab.run(t, "run", "--no-memory", "--workspace", ws, "--workspace-mode", "rw", "--script", script, "x"); r.code != 2 || !strings.Contains(r.stderr, "agentbox changes") {
		t.Errorf("--workspace-mode rw: %d %q", r.code, r.stderr)
	}
}

// Exit codes on the cluster: a missing image is 125, nothing is started.
func TestK8sMissingImageExit125(t *testing.T) {
	r := abCmd{fullEnv: k8sEnv(t)}.run(t, "exec", "--workspace", t.TempDir(), "--image", "agentbox/no-such-image:latest", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "no-such-image") {
		t.Fatalf("exec with a missing image: %d %q", r.code, r.stderr)
	}
}

// k8sPods lists the agentbox pods of the test namespace: name -> owner.
func k8sPods(t *testing.T) map[string]string {
	t.Helper()
	cs := k8sClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Pods("agentbox").List(ctx, metav1.ListOptions{LabelSelector: "agentbox.session"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Annotations["agentbox.owner"]
		}
	}
	if np, err := cs.NetworkingV1().NetworkPolicies("agentbox").List(ctx, metav1.ListOptions{LabelSelector: "agentbox.session"}); err == nil {
		for _, p := range np.Items {
			out["netpol/"+p.Name] = p.Annotations["agentbox.owner"]
		}
	}
	return out
}

// ownedBy is the pod (not policy) whose owner is pid.
func ownedBy(pods map[string]string, pid int) string {
	for name, owner := range pods {
		if !strings.HasPrefix(name, "netpol/") && strings.HasPrefix(owner, fmt.Sprintf("%d:", pid)) {
			return name
		}
	}
	return ""
}

// The owner of a pod killed: gc removes its pod and NetworkPolicy, and
// leaves a live owner's pod alone.
func TestK8sGCOwnerKilled(t *testing.T) {
	env := k8sEnv(t)
	start := func() *exec.Cmd {
		return startInterruptible(t, env, "exec", "--timeout", "10m", "--workspace", t.TempDir(), "--", "sleep 600")
	}
	victim, live := start(), start()
	var victimPod, livePod string
	testutil.Eventually(t, 3*time.Minute, "both pods", func() bool {
		pods := k8sPods(t)
		victimPod, livePod = ownedBy(pods, victim.Process.Pid), ownedBy(pods, live.Process.Pid)
		return victimPod != "" && livePod != ""
	})
	_ = victim.Process.Signal(syscall.SIGKILL)
	_, _ = victim.Process.Wait() // reaped: a zombie would still look alive
	r := abCmd{fullEnv: env}.run(t, "gc")
	t.Logf("victim %s, live %s; gc: %s", victimPod, livePod, strings.TrimSpace(r.stdout))
	if r.code != 0 || !strings.Contains(r.stdout, victimPod) || !strings.Contains(r.stdout, "owner process is gone") {
		t.Fatalf("gc: %d %q %q", r.code, r.stdout, r.stderr)
	}
	testutil.Eventually(t, time.Minute, "the victim's pod and policy to go", func() bool {
		pods := k8sPods(t)
		_, pod := pods[victimPod]
		_, pol := pods["netpol/"+victimPod]
		return !pod && !pol
	})
	if pods := k8sPods(t); pods[livePod] == "" || pods["netpol/"+livePod] == "" {
		t.Errorf("gc removed a live owner's pod or policy: %v", pods)
	}
}

// A batch of 10 tasks spread as pods: results, resume and audit as on
// Docker.
func TestK8sBatch10(t *testing.T) {
	env := k8sEnv(t)
	tasks := batchFixture(t, 10, 10, "")
	out := filepath.Join(t.TempDir(), "results")
	audit := filepath.Join(t.TempDir(), "a.jsonl")
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "batch", tasks, "--concurrency", "20", "--output", out, "--audit", audit)
	if r.code != 0 {
		t.Fatalf("batch: %d %s %s", r.code, r.stdout, r.stderr)
	}
	lines := readBatchLines(t, filepath.Join(out, "results.jsonl"))
	if len(lines) != 10 {
		t.Fatalf("%d result lines", len(lines))
	}
	for _, l := range lines {
		if l.Status != "ok" {
			t.Errorf("task %s: %s", l.ID, l.Status)
		}
		if b, err := os.ReadFile(filepath.Join(out, l.ID, "files", "out.txt")); err != nil || string(b) != "done\n" {
			t.Errorf("task %s: out.txt not exported: %q %v", l.ID, b, err)
		}
	}
	if rep := batchVerifyLog(t, audit); rep.Sessions < 10 {
		t.Errorf("audit log: %+v", rep)
	}
	r = ab.run(t, "batch", tasks, "--resume", "--output", out, "--audit", audit)
	if r.code != 0 || len(readBatchLines(t, filepath.Join(out, "results.jsonl"))) != 10 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
}

// doctor's pass path on the test cluster (pods get only lo).
func TestK8sDoctor(t *testing.T) {
	r := abCmd{fullEnv: k8sEnv(t)}.run(t, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "pods get only lo") || !strings.Contains(r.stdout, "all good") {
		t.Fatalf("doctor: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// agentbox mcp on the cluster: the tools run in a pod on a copy, and when
// the client goes the changes wait for review.
func TestK8sMCP(t *testing.T) {
	env := k8sEnv(t)
	ws := t.TempDir()
	stderr, answer := mcpCall(t, env, "echo from-the-pod > f.txt && cat f.txt", "mcp", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"))
	if !strings.Contains(answer, "from-the-pod") {
		t.Fatalf("tool answer %q", answer)
	}
	m := sessionRe.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no pending session: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "f.txt")); err == nil {
		t.Fatal("the workspace changed before apply")
	}
	if st := (abCmd{fullEnv: env}).run(t, "changes", "--stat", m[1]); !strings.Contains(st.stdout, "added    f.txt") {
		t.Fatalf("changes: %q", st.stdout)
	}
}
