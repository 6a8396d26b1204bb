package main_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// stageEnv is a fresh environment for the binary and its store of
// session records.
func stageEnv(t *testing.T) (env []string, store string) {
	t.Helper()
	env = baseEnv(t)
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "XDG_STATE_HOME="); ok {
			return env, filepath.Join(v, "agentbox", "work")
		}
	}
	t.Fatal("no XDG_STATE_HOME in the test environment")
	return nil, ""
}

// keepPolicy is the default policy with background processes kept.
func keepPolicy(t *testing.T, edit func(string) string) string {
	t.Helper()
	def, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "policy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, p, edit(strings.Replace(string(def), "background: kill", "background: keep", 1)), 0o644)
	return p
}

// TestStagedHeldOutOfView: the sandbox writes .envrc and .vscode/ (held),
// reads them and keeps a background process with .envrc open for
// writing; in the NEXT call, cat, ls -la, stat and open-for-write of the
// held entries, and the background process, see none of the held
// content, and nothing they write reaches the workspace or the copy kept
// for review. The same run renames, deletes and replaces entries (a
// directory replaced whole: opaque; deletions in a directory the sandbox
// made): the sandbox's view at the end is exactly the workspace.
func TestStagedHeldOutOfView(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	writeFile(t, filepath.Join(ws, "a.txt"), "a\n", 0o644)
	if err := os.MkdirAll(filepath.Join(ws, "old", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "old", "sub", "o"), "o\n", 0o644)
	bg := `python3 -c 'import os, time
if os.fork() == 0:
    os.setsid()
    kept = open(".envrc", "a")
    while not os.path.exists("go"):
        time.sleep(0.05)
    seen = []
    for i in range(20):
        for p in (".envrc", ".vscode/tasks.json"):
            try:
                seen.append(p + ":" + open(p).read())
            except Exception as e:
                seen.append(p + ":" + type(e).__name__)
        try:
            kept.write("bg-write\n"); kept.flush()
        except Exception as e:
            seen.append("kept:" + type(e).__name__)
        time.sleep(0.05)
    open("bg.txt", "w").write("\n".join(seen) + "\nDONE\n")
'`
	// The writes to held paths go through python: the exec-time check
	// refuses a shell redirection to them before anything runs.
	call1 := `python3 -c 'import os; open(".envrc", "w").write("echo pwned\n"); os.makedirs(".vscode"); open(".vscode/tasks.json", "w").write("{\"t\":1}\n")' && mkdir -p d && echo x > d/x && echo y > d/y && ` +
		`mv a.txt b.txt && rm -rf old && mkdir old && echo n > old/n && rm README && ` +
		`cat .envrc .vscode/tasks.json > /dev/null && ls -la . .vscode > /dev/null && stat .envrc > /dev/null && ` + bg
	call2 := `touch go; cat .envrc > seen.txt 2>&1; cat .vscode/tasks.json >> seen.txt 2>&1; ls -la . .vscode >> seen.txt 2>&1; ` +
		`stat -c '%n %s' .envrc >> seen.txt 2>&1; python3 -c 'open(".envrc", "a").write("rewritten\n"); open(".vscode/new.json", "w").write("new")' 2>> seen.txt; ` +
		`rm d/x && mv d/y d/y2; for i in $(seq 100); do test -e bg.txt && break; sleep 0.1; done; echo ok`
	call3 := `find . -path ./.git -prune -o -print | sort > /tmp/view && mv /tmp/view view.txt`
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, "turns:\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(call1)+"}}\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(call2)+"}}\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(call3)+"}}\n"+
		"  - content: done\n", 0o644)
	env, store := stageEnv(t)
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", keepPolicy(t, func(s string) string { return s }),
		"--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "held view")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	for _, p := range []string{".envrc", ".vscode"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("held %s reached the workspace", p)
		}
	}
	seen := readFile(t, filepath.Join(ws, "seen.txt"))
	bgSeen := readFile(t, filepath.Join(ws, "bg.txt"))
	if !strings.Contains(bgSeen, "DONE") {
		t.Fatalf("the background process did not report: %q\n%s", bgSeen, r.stderr)
	}
	for what, s := range map[string]string{"the next call": seen, "the background process": bgSeen} {
		if strings.Contains(s, "pwned") || strings.Contains(s, `"t":1`) {
			t.Errorf("%s read held content:\n%s", what, s)
		}
	}
	t.Logf("the next call saw:\n%s\nthe background process saw (first lines):\n%s", seen, firstLines(bgSeen, 4))
	held := filepath.Join(store, sessionOf(t, r.stderr), "stage", "held", "1")
	if got := readFile(t, filepath.Join(held, ".envrc")); got != "echo pwned\n" {
		t.Errorf("the copy kept for review changed: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(held, ".vscode", "new.json")); err == nil {
		t.Error("the sandbox wrote into the copy kept for review")
	}
	// The workspace after renames, deletions and an opaque directory, and
	// the sandbox's view of it at the last call: the same tree.
	for _, p := range []string{"a.txt", "README", "old/sub", "d/x", "d/y"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s is still in the workspace", p)
		}
	}
	for p, want := range map[string]string{"b.txt": "a\n", "old/n": "n\n", "d/y2": "y\n"} {
		if got := readFile(t, filepath.Join(ws, p)); got != want {
			t.Errorf("workspace %s = %q, want %q", p, got, want)
		}
	}
	view := strings.Fields(readFile(t, filepath.Join(ws, "view.txt")))
	host := hostTree(t, ws)
	if strings.Join(view, " ") != strings.Join(host, " ") {
		t.Errorf("the sandbox's view at the last call:\n%v\nthe workspace:\n%v", view, host)
	}
}

// TestStagedUnsafeWorkspacePath: a workspace named so that its path
// would rewrite overlay's mount options works in rw: the sandbox sees
// exactly the workspace, nothing of /etc, and its write is promoted.
func TestStagedUnsafeWorkspacePath(t *testing.T) {
	testutil.RequireDocker(t)
	ws := filepath.Join(t.TempDir(), "a=b,lowerdir=/etc:x")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "README"), "hello\n", 0o644)
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: "+
		yamlQuote(`ls -A > /tmp/seen; for f in passwd hostname os-release; do test -e $f && echo LEAK-$f >> /tmp/seen; done; mv /tmp/seen seen.txt; echo hi > made.txt`)+"}}\n  - content: done\n", 0o644)
	r := agentbox(t, nil, "run", "--no-memory", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "odd path")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "made.txt")); got != "hi\n" {
		t.Errorf("made.txt = %q\n%s", got, r.stderr)
	}
	if got := strings.Join(strings.Fields(readFile(t, filepath.Join(ws, "seen.txt"))), " "); got != "README" {
		t.Errorf("the sandbox saw %q, want exactly the workspace (README)", got)
	}
}

// TestStagedDiskBoundEngine: rw with sandbox.limits.disk: a write past
// the bound fails in the sandbox with "No space left on device", the
// session goes on, and the header says the bound.
func TestStagedDiskBoundEngine(t *testing.T) {
	testutil.RequireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("the bound needs agentbox to run as root")
	}
	ws := gitRepo(t)
	pol := keepPolicy(t, func(s string) string {
		return strings.Replace(s, "    # disk: 2GiB ", "    disk: 16MiB  ", 1)
	})
	if !strings.Contains(readFile(t, pol), "    disk: 16MiB") {
		t.Fatal("could not set limits.disk in the test policy")
	}
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: "+
		yamlQuote(`dd if=/dev/zero of=big bs=1M count=64 2> /tmp/dd; rm -f big; mv /tmp/dd dd.txt`)+"}}\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: \"echo after > after.txt\"}}\n  - content: done\n", 0o644)
	r := agentbox(t, nil, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "fill")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "dd.txt")); !strings.Contains(got, "No space left on device") {
		t.Errorf("dd past the bound: %q\n%s", got, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "after.txt")); got != "after\n" {
		t.Errorf("the session did not go on: %q", got)
	}
	if !strings.Contains(r.stderr, "disk bound: 16 MiB") {
		t.Errorf("the header does not say the bound:\n%s", r.stderr)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("reading %s: %v", p, err)
	}
	return string(b)
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// hostTree lists the workspace as the sandbox's find does (./path,
// sorted, .git left out, view.txt too: it was written after).
func hostTree(t *testing.T, ws string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		switch {
		case rel == ".git":
			return filepath.SkipDir
		case rel == "view.txt":
			return nil
		}
		out = append(out, "./"+rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out[0] = "." // the root
	sort.Strings(out)
	return out
}
