package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// The python toolchain image through the real binary: `--image python` is
// agentbox/python:latest (built once when the machine lacks it: images
// persist between runs), a venv with pip works in it under the default
// hardening, and the hardening's key properties hold in it as in the base.
func TestPythonImageEndToEnd(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\n", 0o644)
	execPy := func(cmd string) result {
		return agentbox(t, nil, "exec", "--workspace", ws, "--policy", pol, "--image", "python", "--", cmd)
	}
	r := execPy("true")
	if r.code == 125 && strings.Contains(r.stderr, "agentbox image build python") {
		b := agentbox(t, nil, "image", "build", "python")
		if b.code != 0 || !strings.Contains(b.stdout, "built agentbox/python:latest") {
			t.Fatalf("image build python: %d %s %s", b.code, b.stdout, b.stderr)
		}
		r = execPy("true")
	}
	if r.code != 0 {
		t.Fatalf("exec --image python: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = execPy("python3 -m venv /workspace/.venv && /workspace/.venv/bin/pip --version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pip ") || !strings.Contains(r.stdout, "/workspace/.venv/") {
		t.Fatalf("venv + pip in the python image: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, ".venv", "pyvenv.cfg")); err != nil {
		t.Errorf("the venv did not reach the workspace: %v", err)
	}
	// As the hardening suite does: a set uid:gid, not the invoking root's.
	polUser := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\nsandbox:\n  user: \"4321:4321\"\ncommands:\n  default: allow\n  dynamic: allow\n", 0o644)
	r = agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--policy", polUser, "--image", "python", "--", `grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status; id -u; python3 -c 'open("/usr/lib/marker","w")' 2>&1 | grep -q 'Read-only file system' && echo ROOT-RO; ls -l /var/run/docker.sock 2>&1 || echo NO-SOCK`)
	out := r.stdout
	for _, want := range []string{"CapEff:\t0000000000000000", "Seccomp:\t2", "NoNewPrivs:\t1", "\n4321\n", "ROOT-RO", "NO-SOCK"} {
		if !strings.Contains(out, want) {
			t.Errorf("hardening in the python image: %q missing from %q (stderr %q)", want, out, r.stderr)
		}
	}
}

// The other toolchain images through the real binary (make test builds
// them: make images): `--image NAME` runs agentbox/NAME:latest, and its
// toolchain runs under the default hardening.
func TestToolchainImagesEndToEnd(t *testing.T) {
	probe := map[string]string{
		"node": "node --version && npm --version",
		"go":   `go version && cd /workspace && printf 'package main\n\nfunc main() { println("built") }\n' > main.go && go mod init example.com/m >/dev/null 2>&1 && go run .`,
		"full": "python3 -m pip --version && node --version && go version && cc --version && rg --version && jq --version && curl --version && unzip -v",
	}
	// go build writes its work files under /tmp (GOTMPDIR): the files
	// rules must allow that, as the built-in default policy does.
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"**\", \"/tmp/**\"]\n", 0o644)
	for _, n := range []string{"node", "go", "full"} {
		t.Run(n, func(t *testing.T) {
			testutil.RequireImage(t, n)
			ws := t.TempDir()
			r := agentbox(t, nil, "exec", "--workspace", ws, "--policy", pol, "--image", n, "--", probe[n])
			if r.code != 0 {
				t.Fatalf("%s image: %q: %d %s %s", n, probe[n], r.code, r.stdout, r.stderr)
			}
			if n == "go" && !strings.Contains(r.stderr+r.stdout, "built") {
				t.Errorf("go run in the go image printed nothing: %q %q", r.stdout, r.stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(ws, "go-build*")); len(left) > 0 {
				t.Errorf("go's work directory (GOTMPDIR=/workspace) was left in the workspace: %v", left)
			}
		})
	}
}
