package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// steerHeldPolicy denies pol (and what is beneath it) by files.write,
// on top of the default's denials: the policy reason to hold a
// directory.
const steerHeldPolicy = "files: {write: {deny: [..., \"pol\", \"pol/**\"]}}\n"

// steerHeldTurns are script turns (python, so that no command rule sees
// the paths: the decision on the host is what is tested) of held
// directories with a link into .git/hooks and executables (touching
// marker) beneath: the three calls (d -> .git/hooks, promoted:
// inside; d re-pointed to /etc, held; d replaced by a directory with a
// pre-commit, which an overlay refuses with ESTALE: the held d is a
// scrubbed entry there), a link promoted then replaced by a directory
// with a hook (r), a directory held as a host-run file (.devcontainer)
// and one held by files.write (pol, steerHeldPolicy). With conflict, a
// last call makes cf/ (the same beneath) and waits until the host has
// made cf a link to .git/hooks meanwhile (steerConflict): cf is held as
// a conflict.
func steerHeldTurns(marker string, conflict bool) string {
	pre := `import os, time
H = "#!/bin/sh\ntouch ` + marker + `\n"
def exe(p):
    os.makedirs(os.path.dirname(p), exist_ok=True); open(p, "w").write(H); os.chmod(p, 0o755)
def tree(d):
    exe(d + "/post-checkout"); exe(d + "/sub/pre-commit"); os.symlink("../.git/hooks", d + "/h")
`
	call := func(py string) string {
		return "  - tool_calls:\n      - {name: execute_bash, args: {command: " + yamlQuote("python3 -c '"+pyEsc(pre+py)+"'") + "}}\n"
	}
	s := call(`os.symlink(".git/hooks", "d"); os.symlink(".git/hooks", "r")`) +
		call(`os.remove("d"); os.symlink("/etc", "d")`) +
		call(`try:
    os.remove("d"); exe("d/pre-commit")
except OSError as e:
    print("d:", e)
os.remove("r"); exe("r/pre-commit")
tree(".devcontainer")
tree("pol")`)
	if conflict {
		s += call(`tree("cf")
open("cf.ready", "w").close()
for i in range(1200):
    if os.path.lexists("sig/go%d" % i):
        break
    time.sleep(0.05)
else:
    print("the host did not make cf")`)
	}
	return s
}

// steerConflict plays the user for steerHeldTurns' conflict: once the
// sandbox has made cf.ready (in the session's upper layer), the host
// makes cf a link to .git/hooks in the workspace, then sig/go0…go1199
// (the sandbox looks up a new name each time, so no cached lookup hides
// them). The returned func stops it.
func steerConflict(t *testing.T, env []string, ws string) (stop func()) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(ws, "sig"), 0o755); err != nil {
		t.Fatal(err)
	}
	done, wg := make(chan struct{}), sync.WaitGroup{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !inSandbox(env, ws, "cf.ready") {
			select {
			case <-done:
				return
			default:
				time.Sleep(50 * time.Millisecond)
			}
		}
		if err := os.Symlink(".git/hooks", filepath.Join(ws, "cf")); err != nil {
			t.Errorf("the user's cf: %v", err)
		}
		for i := range 1200 {
			_ = os.WriteFile(filepath.Join(ws, "sig", fmt.Sprintf("go%d", i)), nil, 0o644)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// steerHeldCheck: no hook reached .git/hooks, nothing of .devcontainer
// or pol reached the workspace, d is no link that leaves .git's hooks, r
// is a real directory, cf (with conflict) is still the user's link; the
// audit log says each was held (heldWant: paths, or their parents); then
// the host's git commits and checks out and runs nothing of the agent's,
// and steerCheck holds.
func steerHeldCheck(t *testing.T, s steerWS, log, stderr string, conflict bool, heldWant ...string) {
	t.Helper()
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".git/hooks/sub", ".devcontainer", "pol"} {
		if _, err := os.Lstat(filepath.Join(s.ws, p)); err == nil {
			t.Errorf("%s reached the workspace\n%s", p, stderr)
		}
	}
	if fi, err := os.Lstat(filepath.Join(s.ws, "d")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t2, _ := os.Readlink(filepath.Join(s.ws, "d")); !strings.HasPrefix(t2, ".git") {
			t.Errorf("d points to %q", t2)
		}
	}
	if fi, err := os.Lstat(filepath.Join(s.ws, "r")); err != nil || !fi.IsDir() {
		t.Errorf("r is not the directory the sandbox made: %v %v\n%s", fi, err, stderr)
	}
	if conflict {
		if l, err := os.Readlink(filepath.Join(s.ws, "cf")); err != nil || l != ".git/hooks" {
			t.Errorf("cf is not the user's link: %q %v", l, err)
		}
		heldWant = append(heldWant, "cf")
	}
	held := heldAlarms(t, log)
	for _, w := range heldWant {
		found := false
		for p := range held {
			found = found || p == w || strings.HasPrefix(p, w+"/")
		}
		if !found {
			t.Errorf("%s was not held (not made, or promoted): held %v", w, held)
		}
	}
	if conflict && held["cf"] != "conflict" {
		t.Errorf("cf was held by %q, want conflict", held["cf"])
	}
	writeFile(t, filepath.Join(s.ws, "user.txt"), "u\n", 0o644)
	hostGit(t, s.ws, "add", "user.txt")
	hostGit(t, s.ws, "commit", "-qm", "user")
	hostGit(t, s.ws, "checkout", "-qb", "other")
	if _, err := os.Stat(s.marker); err == nil {
		t.Fatal("the host's git ran the agent's hook")
	}
	steerCheck(t, s)
}

// TestSteerHeldDirAttack: the held directories of steerHeldTurns in rw,
// on runc and runsc, for every reason (hazard, files.write, conflict,
// and the three calls): no hook reaches .git/hooks, nothing
// below a held directory is promoted, the host's git commit and checkout
// run nothing, and everything beside the workspace is byte-identical.
func TestSteerHeldDirAttack(t *testing.T) {
	steerRuntimes(t, "", steerHeldPolicy, func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		env, log := baseEnv(t), filepath.Join(t.TempDir(), "a.jsonl")
		stop := steerConflict(t, env, s.ws)
		r := abCmd{fullEnv: env}.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", s.ws, "--audit", log, "--script", scriptFile(t, steerHeldTurns(s.marker, true)), "held directories")
		stop()
		if r.code != 0 {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		steerHeldCheck(t, s, log, r.stderr, true, "d", ".devcontainer", "pol")
	})
}
