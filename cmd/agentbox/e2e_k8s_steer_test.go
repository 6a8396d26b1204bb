package main_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestK8sSteerPulled: on the cluster, under the default policy (with pol
// denied by files.write), a pod plants the chains of links of every depth
// from 1 to 40 at the paths git writes (steerTurns, .git/logs/HEAD among
// them), the held-directory attack and directories held with a
// link and executables beneath (steerHeldTurns: a host-run .devcontainer,
// the denied pol); its changes are pulled into the session's copy and
// applied: no hook reaches .git/hooks, the host's git runs nothing of the
// agent's, everything beside the workspace is byte-identical and nothing
// in the workspace resolves outside it.
func TestK8sSteerPulled(t *testing.T) {
	env := k8sEnv(t)
	s := steerWorkspace(t)
	ab, log, pol := abCmd{fullEnv: env}, filepath.Join(t.TempDir(), "a.jsonl"), filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, pol, "version: 1\n"+steerHeldPolicy, 0o644)
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", s.ws, "--audit", log,
		"--script", scriptFile(t, steerTurns(s.sentinel)+steerHeldTurns(s.marker, false)), "plant links")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	m := sessionRe.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no pending session in %q", r.stderr)
	}
	if a := ab.run(t, "apply", m[1]); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "work.txt")); err != nil {
		t.Errorf("the pod's ordinary change was not applied: %v", err)
	}
	steerPlanted(t, log)
	steerHeldCheck(t, s, log, r.stderr, false, ".devcontainer", "pol")
}

// TestK8sSteerBackgroundRepoint: the re-pointer of steerRepointer kept
// running in the pod (background: keep) while its changes are pulled;
// after apply the same holds.
func TestK8sSteerBackgroundRepoint(t *testing.T) {
	env := k8sEnv(t)
	s := steerWorkspace(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, pol, "version: 1\nsandbox: {background: keep}\n", 0o644)
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", s.ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--script", steerRepointer(t, s), "keep a re-pointer")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	m := sessionRe.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no pending session in %q", r.stderr)
	}
	if a := ab.run(t, "apply", m[1]); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	steerRepointCheck(t, s, "", r.stderr)
}
