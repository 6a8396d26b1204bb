package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// steerGitPaths are the paths git writes on routine use (commit,
// checkout, fetch): a link planted at one would make the host's git
// write wherever it resolves.
var steerGitPaths = []string{".git/logs/HEAD", ".git/refs/heads/x", ".git/index", ".git/HEAD", ".git/ORIG_HEAD", ".git/FETCH_HEAD"}

// steerDepths are the chain depths planted, one per call.
var steerDepths = []int{1, 2, 3, 7, 16, 39, 40}

// steerScript plants, call after call, chains of links of each depth
// (relative: ../sentinel from the workspace's top; absolute: the host
// path of the sentinel) with their heads linked from every path of
// steerGitPaths and from an ordinary name, plus the "." chain
// (l1 -> ., esc -> l1/l1/../sentinel); then a commit in the sandbox.
func steerScript(t *testing.T, sentinel string) string {
	t.Helper()
	prog := `import os, sys
d, k = int(sys.argv[1]), int(sys.argv[2])
S = "` + sentinel + `"
def chain(kind):
    base = "%s%d_0" % (kind, d)
    if not os.path.lexists(base):
        os.symlink("../" + os.path.basename(S) if kind == "r" else S, base)
    for i in range(1, d + 1):
        n = "%s%d_%d" % (kind, d, i)
        if not os.path.lexists(n):
            os.symlink("%s%d_%d" % (kind, d, i - 1), n)
    return "%s%d_%d" % (kind, d, d)
def plant(p, head):
    os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
    if os.path.lexists(p):
        os.remove(p)
    os.symlink("../" * p.count("/") + head, p)
paths = "` + strings.Join(steerGitPaths, " ") + `".split() + ["notes/k%d" % k]
for i, p in enumerate(paths):
    plant(p, chain("ra"[(i + k) % 2]))
if not os.path.lexists("l1"):
    os.symlink(".", "l1")
for p in ["notes/dot%d" % k, ".git/logs/refs/heads/main"]:
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.remove(p)
    os.symlink("../" * p.count("/") + "l1/l1/../" + os.path.basename(S), p)
`
	s := "turns:\n"
	for k, d := range steerDepths {
		s += "  - tool_calls:\n      - {name: execute_bash, args: {command: " + yamlQuote(fmt.Sprintf("python3 -c '%s' %d %d", pyEsc(prog), d, k)) + "}}\n"
	}
	s += "  - tool_calls:\n      - {name: execute_bash, args: {command: \"echo work > work.txt; git add work.txt; git commit -qm 'agent work' || true\"}}\n"
	s += "  - content: done\n"
	p := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, p, s, 0o644)
	return p
}

// steerCheck runs the host's git as a user would after the session
// (commit, checkout -b, status) and checks that the sentinel beside the
// workspace is byte-identical, that no git path is a link, and that no
// entry of the workspace resolves outside it.
func steerCheck(t *testing.T, ws, sentinel, want string) {
	t.Helper()
	for _, p := range steerGitPaths {
		if fi, err := os.Lstat(filepath.Join(ws, p)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			t.Errorf("%s is a link in the workspace", p)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "user", "--allow-empty"}, {"checkout", "-qb", "user-branch"}, {"commit", "-qm", "again", "--allow-empty"}, {"status", "--short"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("host git %v: %v %s", args, err, out)
		}
	}
	if b, err := os.ReadFile(sentinel); err != nil || string(b) != want {
		t.Fatalf("the sentinel beside the workspace changed: %q %v", b, err)
	}
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != ws && !strings.HasPrefix(r, ws+"/") {
			t.Errorf("%s resolves outside the workspace, to %s", p[len(ws):], r)
		}
		return nil
	})
}

func steerWorkspace(t *testing.T) (ws, sentinel, want string) {
	ws = gitRepo(t)
	sentinel = filepath.Join(filepath.Dir(ws), "sentinel")
	want = "the user's file\n"
	writeFile(t, sentinel, want, 0o644)
	return ws, sentinel, want
}

// TestSteerLinkChainsRW: under the default policy in rw, chains of links
// of depth 1 to 40, relative and absolute, planted at every path git
// writes on routine use: after the session the host's git commit and
// checkout leave the sentinel beside the workspace byte-identical, and
// nothing in the workspace resolves outside it.
func TestSteerLinkChainsRW(t *testing.T) {
	testutil.RequireDocker(t)
	ws, sentinel, want := steerWorkspace(t)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", steerScript(t, sentinel), "plant links")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	steerCheck(t, ws, sentinel, want)
}

// TestSteerLinkChainsCopyApply: the same in copy mode, then apply.
func TestSteerLinkChainsCopyApply(t *testing.T) {
	testutil.RequireDocker(t)
	ws, sentinel, want := steerWorkspace(t)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--workspace-mode", "copy", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", steerScript(t, sentinel), "plant links")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if a := ab.run(t, "apply", sessionOf(t, r.stderr)); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	steerCheck(t, ws, sentinel, want)
}

// TestSteerLinkChainsBatch: a batch task plants the same; its exported
// files, copied into the workspace by the user, steer nothing either.
func TestSteerLinkChainsBatch(t *testing.T) {
	testutil.RequireDocker(t)
	ws, sentinel, want := steerWorkspace(t)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.yaml")
	writeFile(t, tasks, "tasks:\n  - {id: steer, task: steer, workspace: "+ws+", script: "+steerScript(t, sentinel)+"}\n", 0o644)
	out := filepath.Join(t.TempDir(), "results")
	if r := agentbox(t, nil, "batch", tasks, "--output", out, "--audit", filepath.Join(dir, "a.jsonl"), "--no-pool", "--approve", "allow"); r.code != 0 {
		t.Fatalf("batch: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, err := exec.Command("cp", "-a", filepath.Join(out, "steer", "files")+"/.", ws).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	steerCheck(t, ws, sentinel, want)
}

// TestSteerHeldDirAttack: the three-call attack under the default policy
// in rw: d -> .git/hooks (promoted: inside), d re-pointed outside (held),
// d replaced by a directory with an executable pre-commit. The hook never
// reaches .git/hooks and the host's git commit runs nothing. Then a
// directory held as a host-run file (.devcontainer) with a link into
// .git/hooks and an executable beneath: nothing below it is promoted.
func TestSteerHeldDirAttack(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "MARKER")
	hook := "#!/bin/sh\\ntouch " + marker + "\\n"
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "ln -s .git/hooks d"}}
  - tool_calls:
      - {name: execute_bash, args: {command: "rm -f d; ln -s /etc d"}}
  - tool_calls:
      - {name: execute_bash, args: {command: "rm -rf d 2>/dev/null; mkdir -p d && printf '`+hook+`' > d/pre-commit && chmod +x d/pre-commit; ls -la d"}}
  - tool_calls:
      - {name: execute_bash, args: {command: "mkdir -p .devcontainer && ln -s ../.git/hooks .devcontainer/h && printf '`+hook+`' > .devcontainer/post-checkout && chmod +x .devcontainer/post-checkout"}}
  - content: done
`, 0o644)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "three calls")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".devcontainer"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s reached the workspace\n%s", p, r.stderr)
		}
	}
	if fi, err := os.Lstat(filepath.Join(ws, "d")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t2, _ := os.Readlink(filepath.Join(ws, "d")); !strings.HasPrefix(t2, ".git") {
			t.Errorf("d points to %q", t2)
		}
	}
	writeFile(t, filepath.Join(ws, "user.txt"), "u\n", 0o644)
	hostGit(t, ws, "add", "user.txt")
	hostGit(t, ws, "commit", "-qm", "user")
	hostGit(t, ws, "checkout", "-qb", "other")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the host's git ran the agent's hook")
	}
}

// TestSteerBackgroundRepoint: a process left running (background: keep)
// re-points links between inside and outside targets and swaps a
// directory for a link into .git/hooks in a loop, during every promotion
// and after the last call: nothing that resolves outside reaches the
// workspace, no hook reaches .git/hooks, the sentinel stays.
func TestSteerBackgroundRepoint(t *testing.T) {
	testutil.RequireDocker(t)
	ws, sentinel, want := steerWorkspace(t)
	def, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "policy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, pol, strings.Replace(string(def), "background: kill", "background: keep", 1), 0o644)
	loop := `python3 -c 'import os, time
if os.fork() == 0:
    os.setsid()
    S = "` + sentinel + `"
    n = 0
    while True:
        n += 1
        for name, tgt in (("lk", "README" if n % 2 else S), ("lr", "l1/l1/../sentinel" if n % 3 else "README"), ("l1", ".")):
            try:
                os.symlink(tgt, name + ".new"); os.rename(name + ".new", name)
            except OSError:
                pass
        try:
            if n % 2:
                os.makedirs("sw", exist_ok=True); open("sw/pre-commit", "w").write("#!/bin/sh\ntouch /tmp/x\n"); os.chmod("sw/pre-commit", 0o755)
            else:
                os.symlink(".git/hooks", "sw.new"); os.rename("sw.new", "sw") if not os.path.isdir("sw") or os.path.islink("sw") else None
        except OSError:
            pass
        time.sleep(0.01)
'`
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(loop)+"}}\n"+
		strings.Repeat("  - tool_calls:\n      - {name: execute_bash, args: {command: \"sleep 0.3; echo x >> later.txt\"}}\n", 5)+"  - content: done\n", 0o644)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "keep a re-pointer")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "later.txt")); err != nil {
		t.Fatalf("the ordinary change was not promoted: %v\n%s", err, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook reached .git/hooks")
	}
	steerCheck(t, ws, sentinel, want)
}
