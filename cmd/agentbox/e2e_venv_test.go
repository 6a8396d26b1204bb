package main_test

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// writeWheel writes a pure-Python wheel with a console script (hello) to
// path: a local package pip installs with no index and no network.
func writeWheel(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range map[string]string{
		"hello/__init__.py":                    "def main():\n    print('hello from a local package')\n",
		"hello-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: hello\nVersion: 1.0\n",
		"hello-1.0.dist-info/WHEEL":            "Wheel-Version: 1.0\nGenerator: agentbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"hello-1.0.dist-info/entry_points.txt": "[console_scripts]\nhello = hello:main\n",
		"hello-1.0.dist-info/RECORD":           "hello/__init__.py,,\nhello-1.0.dist-info/METADATA,,\nhello-1.0.dist-info/WHEEL,,\nhello-1.0.dist-info/entry_points.txt,,\nhello-1.0.dist-info/RECORD,,\n",
	} {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A venv made in a staged rw workspace of the python image works across
// calls and sessions: its interpreter is a copy (a link to /usr/bin/python3
// would be held), pip installs a local wheel with no network, the wheel's
// console script runs; neither the venv's python nor the script's #!
// interpreter is an unexpected_exec, and nothing is held. A venv asked for
// with --symlinks is held with the fix in the reason.
func TestPythonVenvInStagedWorkspace(t *testing.T) {
	testutil.RequireDocker(t)
	if agentbox(t, nil, "exec", "--image", "python", "--workspace", t.TempDir(), "--", "true").code != 0 {
		t.Skip("agentbox/python:latest is not built (agentbox image build python)")
	}
	ws := t.TempDir()
	writeWheel(t, filepath.Join(ws, "hello-1.0-py3-none-any.whl"))
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	exec := func(cmd string) result {
		t.Helper()
		r := agentbox(t, nil, "exec", "-q", "--image", "python", "--network", "none", "--workspace", ws, "--policy", pol, "--audit", log, "--", cmd)
		if r.code != 0 {
			t.Fatalf("%q: %d %q %q", cmd, r.code, r.stdout, r.stderr)
		}
		return r
	}
	exec("python3 -m venv .venv")
	if fi, err := os.Lstat(filepath.Join(ws, ".venv", "bin", "python3")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the venv's python3 on the host: %v %v; want a regular file (a copy)", fi, err)
	}
	exec(".venv/bin/pip install --no-index ./hello-1.0-py3-none-any.whl")
	if r := exec(".venv/bin/hello; .venv/bin/python -c 'import sys; print(sys.prefix)'"); r.stdout != "hello from a local package\n/workspace/.venv\n" {
		t.Errorf("the console script and the venv's python: %q", r.stdout)
	}
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event != "alarm" {
			continue
		}
		if strings.HasPrefix(l.rec.What, "held") {
			t.Errorf("held: %s %s (%s)", l.rec.Path, l.rec.Rule, l.rec.Reason)
		}
		if l.rec.What == "unexpected_exec" && len(l.rec.Argv) > 0 && strings.HasPrefix(filepath.Base(l.rec.Argv[0]), "python") && len(l.rec.Argv) > 1 && !strings.Contains(l.rec.Argv[1], "pip/_vendor") {
			t.Errorf("unexpected_exec for the venv's python: %q (from %q)", l.rec.Argv, l.rec.Parents)
		}
	}

	r := agentbox(t, nil, "exec", "--image", "python", "--workspace", ws, "--policy", pol, "--audit", log, "--", "python3 -m venv --symlinks .venv-links")
	if r.code != 0 || !strings.Contains(r.stderr, ".venv-links/bin/python3") {
		t.Errorf("--symlinks venv: %d %q", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".venv-links", "bin", "python3")); err == nil {
		t.Error("a symlink to /usr/bin/python3 reached the host workspace")
	}
	found := false
	for _, l := range readAuditLog(t, log) {
		found = found || l.rec.Event == "alarm" && l.rec.Path == ".venv-links/bin/python3" && strings.Contains(l.rec.Reason, "python3 -m venv --copies")
	}
	if !found {
		t.Error("the held symlink's record does not say the fix")
	}
}
