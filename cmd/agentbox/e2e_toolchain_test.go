package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// toolchainProject is a small project whose tests fail until one file is
// fixed, in one toolchain.
type toolchainProject struct {
	name  string
	files map[string]string
	test  string // the command that runs its tests
	fix   [2]string
	// planted replaces files so that the tests (through the toolchain:
	// a package script, a test helper, a test binary) run a denied
	// program (mount: the images have no sudo); denied is its name.
	planted map[string]string
	denied  string
}

var toolchainProjects = map[string]toolchainProject{
	"python": {
		name: "python",
		files: map[string]string{
			"calc.py":      "def add(a, b):\n    return a - b\n",
			"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
		},
		test:    "python3 -m pytest -q -p no:cacheprovider",
		fix:     [2]string{"calc.py", "def add(a, b):\n    return a + b\n"},
		planted: map[string]string{"conftest.py": "import subprocess\n\nsubprocess.run(['mount', '-t', 'tmpfs', 'x', '/mnt'])\n"},
		denied:  "mount",
	},
	"node": {
		name: "node",
		files: map[string]string{
			"package.json":      `{"name": "cart", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
			"cart.js":           "'use strict';\n\nfunction total(items) {\n  let s = 0;\n  for (const i of items) s += i.price + i.qty;\n  return s;\n}\n\nmodule.exports = { total };\n",
			"test/cart.test.js": "'use strict';\n\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst { total } = require('../cart.js');\n\ntest('total', () => {\n  assert.strictEqual(total([{ price: 2, qty: 3 }]), 6);\n});\n",
		},
		test:    "npm test",
		fix:     [2]string{"cart.js", "'use strict';\n\nfunction total(items) {\n  let s = 0;\n  for (const i of items) s += i.price * i.qty;\n  return s;\n}\n\nmodule.exports = { total };\n"},
		planted: map[string]string{"package.json": `{"name": "cart", "version": "1.0.0", "private": true, "scripts": {"test": "mount -t tmpfs x /mnt; node --test"}}` + "\n"},
		denied:  "mount",
	},
	"go": {
		name: "go",
		files: map[string]string{
			"go.mod":       "module example.com/calc\n\ngo 1.19\n",
			"calc.go":      "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n",
			"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n",
		},
		test:    "go test ./...",
		fix:     [2]string{"calc.go", "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"},
		planted: map[string]string{"helper_test.go": "package calc\n\nimport \"os/exec\"\n\nfunc init() { _ = exec.Command(\"mount\", \"-t\", \"tmpfs\", \"x\", \"/mnt\").Run() }\n"},
		denied:  "mount",
	},
}

// toolchainScript runs the tests, fixes the bug, runs them again and
// commits.
func toolchainScript(p toolchainProject) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return "turns:\n" +
		"  - tool_calls:\n      - {name: execute_bash, args: {command: " + q(p.test) + "}}\n" +
		"  - tool_calls:\n      - {name: write_file, args: {path: " + q(p.fix[0]) + ", content: " + q(p.fix[1]) + "}}\n" +
		"  - tool_calls:\n      - {name: execute_bash, args: {command: " + q(p.test) + "}}\n" +
		"  - tool_calls:\n      - {name: execute_bash, args: {command: \"git add -A && git commit -q -m 'fix the bug'\"}}\n" +
		"  - content: fixed\n"
}

// toolchainSession runs the script in a git workspace holding the project
// (with planted files over it when given) in image, under the built-in
// default policy, nobody to ask; it returns the run, the workspace, the
// host git environment and the audit records.
func toolchainSession(t *testing.T, image string, p toolchainProject, planted map[string]string) (result, string, []string, []auditLine) {
	t.Helper()
	env := baseEnv(t)
	ws := gitWorkspace(t, env)
	for name, body := range p.files {
		writeFile(t, filepath.Join(ws, name), body, 0o644)
	}
	hostGitEnv(t, env, ws, "add", "-A")
	hostGitEnv(t, env, ws, "commit", "-q", "-m", "the project")
	for name, body := range planted {
		writeFile(t, filepath.Join(ws, name), body, 0o644)
	}
	script := writeFile(t, filepath.Join(t.TempDir(), "s.yaml"), toolchainScript(p), 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := abCmd{fullEnv: env}.run(t, "run", "--no-memory", "--image", image, "--approve", "deny", "--workspace", ws,
		"--audit", log, "--script", script, "the tests fail: fix it, run them again, commit")
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	return r, ws, env, readAuditLog(t, log)
}

// The everyday task in every toolchain image under the BUILT-IN default
// policy with nobody to ask: run the project's failing tests (pytest, npm
// test with node --test, go test ./...), fix the bug with write_file, run
// them again and commit. It finishes with the tests passing and the
// commit in the host repository under the host user's identity, and no
// ask, no denial, no alarm and nothing held: what the toolchain runs of
// itself (go's compile/vet/link and test binary, npm's sh -c of the test
// script, node running the test files, pytest) is part of the command.
// Its programs are recorded with what they are.
func TestToolchainsDailyWork(t *testing.T) {
	testutil.RequireDocker(t)
	for _, c := range []struct{ image, project string }{
		{"python", "python"}, {"node", "node"}, {"go", "go"},
		{"full", "python"}, {"full", "node"}, {"full", "go"},
	} {
		p := toolchainProjects[c.project]
		t.Run(c.image+"/"+c.project, func(t *testing.T) {
			testutil.RequireImage(t, c.image)
			r, ws, env, lines := toolchainSession(t, c.image, p, nil)
			if r.code != 0 {
				t.Fatalf("run: %d\n%s", r.code, r.stderr)
			}
			var exits []int
			var progs []string
			for _, l := range lines {
				rec := l.rec
				switch {
				case rec.Event == "approval", rec.Event == "exec_denied", rec.Event == "alarm",
					rec.Decision == "deny", rec.Decision == "ask":
					t.Errorf("%s: %s", rec.Event, l.raw)
				case rec.Event == "tool_call" && rec.Phase == "result" && rec.Tool == "execute_bash" && rec.ExitCode != nil:
					exits = append(exits, *rec.ExitCode)
					for _, pr := range rec.Programs {
						progs = append(progs, pr.Name+"="+pr.Program+"/"+pr.Toolchain)
					}
				}
			}
			if !slices.Equal(exits, []int{1, 0, 0}) {
				t.Errorf("exit codes (tests, tests after the fix, commit): %v; want [1 0 0]\n%s", exits, r.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, p.fix[0])); string(b) != p.fix[1] {
				t.Errorf("the fix did not reach the workspace: %q", b)
			}
			got := hostGitEnv(t, env, ws, "log", "-1", "--format=%an <%ae>|%s")
			if got != "Ada Lovelace <ada@example.com>|fix the bug" {
				t.Errorf("host git log: %q\n%s", got, r.stderr)
			}
			if st := hostGitEnv(t, env, ws, "status", "--porcelain"); st != "" {
				t.Errorf("the host repository is not clean after the commit (held or stray files?): %q", st)
			}
			if c.project == "go" && !slices.Contains(progs, "compile=compile/go") {
				t.Errorf("programs do not record go's compile as part of the go toolchain: %v", progs)
			}
			if c.project == "node" && !slices.Contains(progs, "sh=sh/") {
				t.Errorf("programs do not record npm's sh: %v", progs)
			}
		})
	}
}

// The planted variants: the tests run mount (denied by the default
// policy, as sudo is; the images have no sudo) through the toolchain (a
// conftest under pytest, npm's test script, a test binary's init). The
// tests still run under the default policy, mount is stopped at its exec
// (an exec_denied record) and is an unexpected_exec alarm.
func TestToolchainsPlantedDenied(t *testing.T) {
	testutil.RequireDocker(t)
	for _, c := range []struct{ image, project string }{
		{"python", "python"}, {"node", "node"}, {"go", "go"}, {"full", "go"},
	} {
		p := toolchainProjects[c.project]
		t.Run(c.image+"/"+c.project, func(t *testing.T) {
			testutil.RequireImage(t, c.image)
			_, _, _, lines := toolchainSession(t, c.image, p, p.planted)
			denied, alarmed := 0, 0
			for _, l := range lines {
				rec := l.rec
				if len(rec.Argv) == 0 || filepath.Base(rec.Argv[0]) != p.denied {
					continue
				}
				switch {
				case rec.Event == "exec_denied" && rec.Decision == "deny":
					denied++
				case rec.Event == "alarm" && rec.What == "unexpected_exec":
					alarmed++
				}
			}
			if denied == 0 || alarmed == 0 {
				var all []string
				for _, l := range lines {
					if l.rec.Event == "exec_denied" || l.rec.Event == "alarm" {
						all = append(all, string(l.raw))
					}
				}
				t.Errorf("%s through %s: %d exec_denied, %d unexpected_exec alarms; want both\n%s", p.denied, p.test, denied, alarmed, strings.Join(all, "\n"))
			}
		})
	}
}

// A copy of the image's python3 run as ./lister, approved: it runs, its
// programs record says what it is (the image's python3.11 run as lister),
// and it is an unexpected_exec alarm although the user approved it.
func TestRenamedInterpreterRecordedAndAlarmed(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	script := writeFile(t, filepath.Join(t.TempDir(), "s.yaml"), "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: \"cp /usr/bin/python3 ./lister && ./lister -c 'print(6*7)'\"}}\n  - content: done\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "run", "--no-memory", "--approve", "allow", "--workspace", ws, "--audit", log, "--script", script, "list")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var progs, alarms []string
	for _, l := range readAuditLog(t, log) {
		for _, p := range l.rec.Programs {
			progs = append(progs, p.Name+"="+p.Program)
		}
		if l.rec.Event == "alarm" && l.rec.What == "unexpected_exec" && len(l.rec.Argv) > 0 {
			alarms = append(alarms, filepath.Base(l.rec.Argv[0])+": "+l.rec.Rule)
		}
	}
	found := false
	for _, p := range progs {
		found = found || strings.HasPrefix(p, "lister=python3")
	}
	if !found {
		t.Errorf("programs do not say lister is the image's python3: %v", progs)
	}
	if len(alarms) != 1 || !strings.HasPrefix(alarms[0], "lister: by content it is the image's python3") {
		t.Errorf("unexpected_exec alarms: %q; want one for lister", alarms)
	}
}
