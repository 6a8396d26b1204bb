package main_test

import (
	"crypto/sha256"
	"encoding/json"
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

// steerDepths are the chain depths the git paths are re-pointed to, one
// per call, after a first call has planted every depth from 1 to 40.
var steerDepths = []int{1, 2, 3, 7, 16, 39, 40}

// steerRuntimes runs f once per OCI runtime the steer effect tests cover,
// the engine's default (runc) and gVisor's runsc, each with a policy file
// pol that layers on the built-in default: sandbox.runtime, plus sandbox
// (more sandbox keys, e.g. ", background: keep") and rest (more of the
// policy's YAML).
func steerRuntimes(t *testing.T, sandbox, rest string, f func(t *testing.T, pol string)) {
	cli := testutil.RequireDocker(t)
	for _, rt := range []string{"", "runsc"} {
		name := rt
		if name == "" {
			name = "runc"
		}
		t.Run(name, func(t *testing.T) {
			if rt != "" {
				testutil.HasRuntime(t, cli, rt)
			}
			pol := filepath.Join(t.TempDir(), "policy.yaml")
			writeFile(t, pol, fmt.Sprintf("version: 1\nsandbox: {runtime: %q%s}\n%s", rt, sandbox, rest), 0o644)
			f(t, pol)
		})
	}
}

// steerTurns are script turns that plant chains of links of three kinds:
// r, whose base leaves by its text (../sentinel from the workspace's
// top); a, whose base is the absolute host path of the sentinel; e,
// whose every link stays inside (the base is ".", each link names the
// one before) while the head, eN_N/../sentinel, leaves only when every
// link of the chain is followed. A first call plants every depth from 1
// to 40 of every kind, each head linked from .git/logs/refs/heads/dN (a
// reflog git appends to), .git/refs/heads/dN and deep/{r,a,e}N, and the
// paths of steerGitPaths to chains of depth 40, 39, …; then call after
// call those paths and an ordinary name (notes/kK) are re-pointed to the
// heads of one depth of steerDepths, beside the "." chain (l1 -> .,
// notes/dotK -> l1/l1/../sentinel); then a commit in the sandbox. A
// planting the sandbox refuses is printed, not fatal: under an overlay a
// name held at the previous call answers ESTALE (its cached lookup is
// the scrubbed entry), so there only the first planting of a git path
// takes; in a copy (Kubernetes) every one does.
func steerTurns(sentinel string) string {
	prog := `import os, sys
d, k = int(sys.argv[1]), int(sys.argv[2])
S = "` + sentinel + `"
B = os.path.basename(S)
def chain(kind, d):
    base = "%s%d_0" % (kind, d)
    if not os.path.lexists(base):
        os.symlink({"r": "../" + B, "a": S, "e": "."}[kind], base)
    for i in range(1, d + 1):
        n = "%s%d_%d" % (kind, d, i)
        if not os.path.lexists(n):
            os.symlink("%s%d_%d" % (kind, d, i - 1), n)
    head = "%s%d_%d" % (kind, d, d)
    return head + "/../" + B if kind == "e" else head
failed = []
def plant(p, head):
    try:
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        if os.path.lexists(p):
            os.remove(p)
        os.symlink("../" * p.count("/") + head, p)
    except OSError as e:
        failed.append("%s: %s" % (p, e.strerror))
paths = "` + strings.Join(steerGitPaths, " ") + `".split()
if d == 0:
    for n in range(1, 41):
        plant(".git/logs/refs/heads/d%d" % n, chain("rae"[n % 3], n))
        plant(".git/refs/heads/d%d" % n, chain("rae"[(n + 1) % 3], n))
        for kind in "rae":
            plant("deep/%s%d" % (kind, n), chain(kind, n))
    for i, p in enumerate(paths):
        plant(p, chain("rae"[i % 3], 40 - i))
else:
    for i, p in enumerate(paths + ["notes/k%d" % k]):
        plant(p, chain("rae"[(i + k) % 3], d))
    if not os.path.lexists("l1"):
        os.symlink(".", "l1")
    for p in ["notes/dot%d" % k, ".git/logs/refs/heads/main"]:
        plant(p, "l1/l1/../" + B)
print("not planted:", failed)
`
	call := func(d, k int) string {
		return "  - tool_calls:\n      - {name: execute_bash, args: {command: " + yamlQuote(fmt.Sprintf("python3 -c '%s' %d %d", pyEsc(prog), d, k)) + "}}\n"
	}
	s := call(0, 0)
	for k, d := range steerDepths {
		s += call(d, k)
	}
	return s + "  - tool_calls:\n      - {name: execute_bash, args: {command: \"echo work > work.txt; git add work.txt; git commit -qm 'agent work' || true\"}}\n"
}

// steerPlanted checks, in the audit log, that the planting of steerTurns
// took effect (the test is not vacuous): every head that leaves only by
// following its chain of inside links (deep/eN), every base that leaves
// by its text (rN_0, aN_0), every link planted in .git at every depth and
// the "." chain's first head were held.
func steerPlanted(t *testing.T, log string) {
	t.Helper()
	held := heldAlarms(t, log)
	want := append([]string{"notes/dot0"}, steerGitPaths...)
	for n := 1; n <= 40; n++ {
		want = append(want, fmt.Sprintf("deep/e%d", n), fmt.Sprintf("r%d_0", n), fmt.Sprintf("a%d_0", n), fmt.Sprintf(".git/logs/refs/heads/d%d", n), fmt.Sprintf(".git/refs/heads/d%d", n))
	}
	var missing []string
	for _, p := range want {
		if _, ok := held[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("planted but not kept out (so not planted, or promoted): %q", missing)
	}
}

// heldAlarms maps each path the audit log's alarm records say was kept
// out of the workspace to the rule that kept it: held on the host (rw,
// copy, batch, a pulled copy), or, on Kubernetes, removed from the pod's
// workspace after its call or dropped from the pull by files.write.
func heldAlarms(t *testing.T, log string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct{ Event, Action, Path, Rule string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Event == "alarm" && (rec.Action == "held" || rec.Action == "removed" || rec.Action == "dropped") {
			held[rec.Path] = rec.Rule
		}
	}
	return held
}

// scriptFile writes a script of turns ending with a final answer.
func scriptFile(t *testing.T, turns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, p, "turns:\n"+turns+"  - content: done\n", 0o644)
	return p
}

// steerWS is a host git repository (ws) and what lies beside it: the
// sentinel file the planted links aim at, a sentinel tree (beside/: a
// file, an executable, a link, a subdirectory) and the path of the
// marker an agent's hook would create (MARKER, absent). before is the
// digest of everything beside the workspace.
type steerWS struct {
	ws, sentinel, marker, before string
}

func steerWorkspace(t *testing.T) steerWS {
	t.Helper()
	ws := gitRepo(t)
	dir := filepath.Dir(ws)
	writeFile(t, filepath.Join(dir, "sentinel"), "the user's file\n", 0o644)
	writeFile(t, filepath.Join(dir, "beside", "f"), "the user's tree\n", 0o644)
	writeFile(t, filepath.Join(dir, "beside", "sub", "run.sh"), "#!/bin/sh\necho user\n", 0o755)
	if err := os.Symlink("sub/run.sh", filepath.Join(dir, "beside", "l")); err != nil {
		t.Fatal(err)
	}
	return steerWS{ws: ws, sentinel: filepath.Join(dir, "sentinel"), marker: filepath.Join(dir, "MARKER"), before: treeDigest(t, dir, "ws")}
}

// treeDigest lists every entry below dir, sorted (path, type and
// permissions, size, modification time, link target, sha256 of the
// content), leaving out the top-level names of skip.
func treeDigest(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %q", l)
		case fi.Mode().IsRegular():
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(c))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("digest of %s: %v", dir, err)
	}
	return b.String()
}

// steerCheck runs the host's git as a user would after the session
// (commit, checkout -b, status) and checks that no git path is a link,
// that everything beside the workspace (the sentinel, the sentinel tree)
// is byte-identical and no marker was made there, and that no entry of
// the workspace resolves outside it.
func steerCheck(t *testing.T, s steerWS) {
	t.Helper()
	ws := s.ws
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
	if _, err := os.Lstat(s.marker); err == nil {
		t.Error("the host's git ran the agent's hook: the marker exists")
	}
	if after := treeDigest(t, filepath.Dir(ws), "ws"); after != s.before {
		t.Fatalf("what lies beside the workspace changed:\nbefore:\n%s\nafter:\n%s", s.before, after)
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

// TestSteerLinkChainsRW: in rw, under the default policy on runc and
// runsc, chains of links of every depth from 1 to 40, relative and
// absolute, planted at every path git writes on routine use: after the
// session the host's git commit and checkout leave everything beside the
// workspace byte-identical, and nothing in the workspace resolves
// outside it.
func TestSteerLinkChainsRW(t *testing.T) {
	steerRuntimes(t, "", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		ab, log := abCmd{fullEnv: baseEnv(t)}, filepath.Join(t.TempDir(), "a.jsonl")
		r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", s.ws, "--audit", log, "--script", scriptFile(t, steerTurns(s.sentinel)), "plant links")
		if r.code != 0 {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		steerPlanted(t, log)
		steerCheck(t, s)
	})
}

// TestSteerLinkChainsCopyApply: the same in copy mode, then apply.
func TestSteerLinkChainsCopyApply(t *testing.T) {
	steerRuntimes(t, "", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		ab, log := abCmd{fullEnv: baseEnv(t)}, filepath.Join(t.TempDir(), "a.jsonl")
		r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace-mode", "copy", "--workspace", s.ws, "--audit", log, "--script", scriptFile(t, steerTurns(s.sentinel)), "plant links")
		if r.code != 0 {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		if a := ab.run(t, "apply", sessionOf(t, r.stderr)); a.code != 0 {
			t.Fatalf("apply: %d %s", a.code, a.stderr)
		}
		steerPlanted(t, log)
		steerCheck(t, s)
	})
}

// TestSteerLinkChainsBatch: a batch task plants the same; its exported
// files, copied into the workspace by the user, steer nothing either.
func TestSteerLinkChainsBatch(t *testing.T) {
	steerRuntimes(t, "", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		steerPlanted(t, steerBatch(t, s, pol, scriptFile(t, steerTurns(s.sentinel))))
		steerCheck(t, s)
	})
}

// steerBatch runs script as the one task of a batch on s.ws with policy
// pol and copies its exported files into the workspace, as a user
// would (cp -a); the result is the batch's audit log.
func steerBatch(t *testing.T, s steerWS, pol, script string) string {
	t.Helper()
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.yaml")
	writeFile(t, tasks, "tasks:\n  - {id: steer, task: steer, workspace: "+s.ws+", script: "+script+"}\n", 0o644)
	out := filepath.Join(dir, "results")
	if r := agentbox(t, nil, "batch", tasks, "--policy", pol, "--output", out, "--audit", filepath.Join(dir, "a.jsonl"), "--no-pool", "--approve", "allow"); r.code != 0 {
		t.Fatalf("batch: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, err := exec.Command("cp", "-a", filepath.Join(out, "steer", "files")+"/.", s.ws).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	return filepath.Join(dir, "a.jsonl")
}
