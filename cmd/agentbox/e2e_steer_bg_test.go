package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// steerRepointer is a script of a first call that leaves a process
// running (background: keep) which, in a loop, re-points links between
// inside and outside targets (lkN, lrN through the "." chain, and
// .git/logs/HEAD) and swaps directories for links (swN: a directory with
// an executable pre-commit, or a link to .git/hooks; sdN: a directory
// with an executable, or a link to the sentinel tree beside the
// workspace), during every promotion and after the last call; five more
// calls each add a line to later.txt. A name held at a promotion answers
// ESTALE in an overlay from then on (its cached lookup is the scrubbed
// entry), so the loop goes on under the next name (N+1).
func steerRepointer(t *testing.T, s steerWS) string {
	loop := `python3 -c 'import errno, os, shutil, time
gen = {}
def name(slot):
    return "%s%d" % (slot, gen.get(slot, 0))
def failed(slot, e):
    if e.errno == errno.ESTALE:
        gen[slot] = gen.get(slot, 0) + 1
def rm(p):
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.remove(p)
def link(slot, tgt):
    n = name(slot) if slot != ".git/logs/HEAD" else slot
    try:
        os.symlink(tgt, n + ".new"); os.rename(n + ".new", n)
    except OSError as e:
        failed(slot, e)
def swap(slot, as_dir, tgt, fname, body):
    n = name(slot)
    try:
        rm(n + ".new")
        if as_dir:
            os.mkdir(n + ".new"); p = n + ".new/" + fname; open(p, "w").write(body); os.chmod(p, 0o755)
        else:
            os.symlink(tgt, n + ".new")
        if os.path.lexists(n):
            os.rename(n, n + ".old")
        os.rename(n + ".new", n)
        rm(n + ".old")
    except OSError as e:
        failed(slot, e)
if os.fork() == 0:
    os.setsid()
    S = "` + s.sentinel + `"
    hook = "#!/bin/sh\ntouch ` + s.marker + `\n"
    if not os.path.lexists("l1"):
        os.symlink(".", "l1")
    n = 0
    while True:
        n += 1
        link("lk", "README" if n % 2 else S)
        link("lr", "l1/l1/../sentinel" if n % 3 else "README")
        link(".git/logs/HEAD", "../../README" if n % 2 else S)
        swap("sw", n % 2, ".git/hooks", "pre-commit", hook)
        swap("sd", n % 3, "../beside", "f", hook)
        time.sleep(0.01)
'`
	return scriptFile(t, "  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(loop)+"}}\n"+
		strings.Repeat("  - tool_calls:\n      - {name: execute_bash, args: {command: \"sleep 0.3; echo x >> later.txt\"}}\n", 5))
}

// steerRepointCheck: the ordinary change arrived, no hook reached
// .git/hooks, and steerCheck holds. With log, the re-pointer was not
// idle: a link of it that leaves (lk, lr through the "." chain) was held,
// and its swapped directories (sw, sd) met promotion (which state a
// promotion meets is the loop's timing: no one of them is required).
func steerRepointCheck(t *testing.T, s steerWS, log, stderr string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(s.ws, "later.txt")); err != nil {
		t.Fatalf("the ordinary change was not promoted: %v\n%s", err, stderr)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook reached .git/hooks")
	}
	if log != "" {
		held := heldAlarms(t, log)
		found := false
		for p := range held {
			found = found || strings.HasPrefix(p, "lk") || strings.HasPrefix(p, "lr")
		}
		b, _ := os.ReadFile(log)
		if !found || !strings.Contains(string(b), `"path":"sw`) || !strings.Contains(string(b), `"path":"sd`) {
			t.Errorf("the re-pointer was idle: no lk or lr held (%v), or no sw or sd promoted or held\n%s", held, stderr)
		}
	}
	steerCheck(t, s)
}

// TestSteerBackgroundRepoint: the re-pointer of steerRepointer, kept
// running in rw on runc and runsc: nothing that resolves outside reaches
// the workspace, no hook reaches .git/hooks, everything beside the
// workspace is byte-identical and no marker is made.
func TestSteerBackgroundRepoint(t *testing.T) {
	steerRuntimes(t, ", background: keep", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		ab, log := abCmd{fullEnv: baseEnv(t)}, filepath.Join(t.TempDir(), "a.jsonl")
		r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", s.ws, "--audit", log, "--script", steerRepointer(t, s), "keep a re-pointer")
		if r.code != 0 {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		steerRepointCheck(t, s, log, r.stderr)
	})
}

// TestSteerBackgroundRepointCopyApply: the same in copy mode, then
// apply.
func TestSteerBackgroundRepointCopyApply(t *testing.T) {
	steerRuntimes(t, ", background: keep", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		ab, log := abCmd{fullEnv: baseEnv(t)}, filepath.Join(t.TempDir(), "a.jsonl")
		r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace-mode", "copy", "--workspace", s.ws, "--audit", log, "--script", steerRepointer(t, s), "keep a re-pointer")
		if r.code != 0 {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		if a := ab.run(t, "apply", sessionOf(t, r.stderr)); a.code != 0 {
			t.Fatalf("apply: %d %s", a.code, a.stderr)
		}
		steerRepointCheck(t, s, log, r.stderr)
	})
}

// TestSteerBackgroundRepointBatch: the same as a batch task, its
// exported files copied into the workspace by the user.
func TestSteerBackgroundRepointBatch(t *testing.T) {
	steerRuntimes(t, ", background: keep", "", func(t *testing.T, pol string) {
		s := steerWorkspace(t)
		log := steerBatch(t, s, pol, steerRepointer(t, s))
		steerRepointCheck(t, s, log, "")
	})
}
