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

// venvRun runs script in ws (the python image, the built-in default
// policy: no policy file where it starts) with args added, and checks
// the session's records: it ran under the built-in default, nothing was
// refused (no exec_denied, no deny), no alarm (no unexpected_exec, pip's
// `uname -rs` included; nothing held), approvals only as allowed, and
// each call exited 0. It returns the calls' output previews and how many
// approvals there were.
func venvRun(t *testing.T, env []string, ws, script string, calls int, args ...string) (outputs []string, approvals int) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	argv := append([]string{"run", "--no-memory", "--image", "python", "--workspace", ws, "--audit", log, "--script", script}, args...)
	r := abCmd{dir: t.TempDir(), fullEnv: env}.run(t, append(argv, "work in a venv")...)
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	var exits []int
	for _, l := range readAuditLog(t, log) {
		rec := l.rec
		switch {
		case rec.Event == "session_start" && rec.PolicyPath != "built-in":
			t.Errorf("the session ran under %q, want the built-in default", rec.PolicyPath)
		case rec.Event == "approval":
			approvals++
			if rec.Decision != "allow" {
				t.Errorf("approval: %s", l.raw)
			}
		case rec.Event == "exec_denied", rec.Event == "alarm", rec.Decision == "deny":
			t.Errorf("%s: %s", rec.Event, l.raw)
		case rec.Event == "tool_call" && rec.Phase == "result" && rec.ExitCode != nil:
			exits = append(exits, *rec.ExitCode)
			outputs = append(outputs, rec.OutputPreview)
		}
	}
	if want := slices.Repeat([]int{0}, calls); !slices.Equal(exits, want) {
		t.Errorf("exit codes %v, want %v\n%s", exits, want, r.stderr)
	}
	return outputs, approvals
}

// A venv and a pip install under the BUILT-IN default policy in a staged
// rw workspace of the python image.
//
// With nobody to ask (--approve deny): `python3 -m venv .venv` (venv runs
// ensurepip, which runs pip: its `uname -rs` included) asks nothing,
// refuses nothing, raises no alarm and holds nothing; the venv's python
// is a copy in the workspace.
//
// The default asks before `pip install` (commands.ask: what it installs
// is code), so `--approve deny` refuses it by design. With the user's
// "always" answer saved for the workspace and no terminal (the way the
// default lets it run with nobody to ask), `.venv/bin/pip install
// --no-index WHEEL` runs: the saved answer is the only approval, pip's
// `uname -rs` is no unexpected_exec, nothing is held, and the package is
// in the workspace's venv and imports.
func TestPipVenvUnderDefaultPolicy(t *testing.T) {
	testutil.RequireDocker(t)
	testutil.RequireImage(t, "python")
	env, store := stageEnv(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeWheel(t, filepath.Join(ws, "hello-1.0-py3-none-any.whl"))
	venv := writeFile(t, filepath.Join(t.TempDir(), "venv.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "python3 -m venv .venv"}}
  - tool_calls:
      - {name: execute_bash, args: {command: ".venv/bin/python -c 'import sys; print(sys.prefix)'"}}
  - content: done
`, 0o644)
	out, approvals := venvRun(t, env, ws, venv, 2, "--approve", "deny")
	if approvals != 0 || len(out) != 2 || out[1] != "/workspace/.venv\n" {
		t.Errorf("the venv: %d approvals, outputs %q", approvals, out)
	}
	if fi, err := os.Lstat(filepath.Join(ws, ".venv", "bin", "python3")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the venv's python3 in the workspace: %v %v; want a regular file (a copy)", fi, err)
	}

	saved, _ := json.Marshal(map[string][]map[string]string{ws: {{"prefix": "pip install"}}})
	writeFile(t, filepath.Join(filepath.Dir(store), "approvals.json"), string(saved), 0o600)
	pip := writeFile(t, filepath.Join(t.TempDir(), "pip.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: ".venv/bin/pip install --no-index ./hello-1.0-py3-none-any.whl"}}
  - tool_calls:
      - {name: execute_bash, args: {command: ".venv/bin/python -c 'import hello; hello.main()'"}}
  - content: done
`, 0o644)
	out, approvals = venvRun(t, env, ws, pip, 2)
	if approvals != 1 || len(out) != 2 || !strings.Contains(out[1], "hello from a local package") {
		t.Errorf("pip install: %d approvals (want the saved one), outputs %q", approvals, out)
	}
	if m, _ := filepath.Glob(filepath.Join(ws, ".venv", "lib", "python3*", "site-packages", "hello", "__init__.py")); len(m) != 1 {
		t.Errorf("the installed package is not in the workspace's venv: %v", m)
	}
}
