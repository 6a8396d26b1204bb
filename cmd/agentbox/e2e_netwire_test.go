package main_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestExecNetworkProxyCLI: `exec --network proxy` end to end through the
// real binary: an allowed fetch to the host's loopback, a refused name
// (decided before any lookup), the net events in audit show/stats, and a
// log that verifies.
func TestExecNetworkProxyCLI(t *testing.T) {
	testutil.RequireDocker(t)
	f := newProxyFetch(t)
	hits, cmd := f.hits, f.cmd
	dir := t.TempDir()
	pol := writeFile(t, filepath.Join(dir, "net.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\nsandbox:\n  network: none\nnetwork:\n  allow: [\"localhost\", \"127.0.0.0/8\", \"::1\"]\n", 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	r := agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--policy", pol, "--audit", log, "--network", "proxy", "--", cmd)
	if r.code != 0 || !strings.Contains(r.stdout, "upstream-ok") || !strings.Contains(r.stdout, "403 ") || !strings.Contains(r.stdout, "network.allow") {
		t.Fatalf("exec --network proxy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if hits.Load() != 1 {
		t.Errorf("upstream hits %d, want 1", hits.Load())
	}
	r = agentbox(t, nil, "audit", "stats", log)
	if r.code != 0 || !strings.Contains(r.stdout, "network:") || !strings.Contains(r.stdout, "localhost") || !strings.Contains(r.stdout, "example.invalid") {
		t.Errorf("audit stats: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = agentbox(t, nil, "audit", "show", log)
	if r.code != 0 || !strings.Contains(r.stdout, "example.invalid:80") {
		t.Errorf("audit show: %d %q", r.code, r.stdout)
	}
	// Replay: the same policy changes nothing; one that allows the
	// refused name and drops loopback flips both net events.
	if r := agentbox(t, nil, "audit", "replay", "--policy", pol, log); r.code != 0 {
		t.Errorf("replay under the same policy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	flip := writeFile(t, filepath.Join(dir, "flip.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\nnetwork:\n  allow: [\"example.invalid\"]\n", 0o644)
	if r := agentbox(t, nil, "audit", "replay", "--policy", flip, log); r.code != 1 || !strings.Contains(r.stdout, "example.invalid:80") || !strings.Contains(r.stdout, "localhost:") {
		t.Errorf("replay under a new policy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r, _ := verifyLog(t, nil, log); r.code != 0 {
		t.Errorf("audit verify: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"exec", "--network", "bogus", "--", "true"},
		{"batch", "--network", "bogus", filepath.Join(dir, "none.jsonl")},
	} {
		if r := agentbox(t, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "want none, proxy or open") {
			t.Errorf("%v: %d %q", args, r.code, r.stderr)
		}
	}
}

// TestNetworkProxyLeavesNothing: the session's socket directory goes on
// SIGINT, and after SIGKILL gc removes it with the container.
func TestNetworkProxyLeavesNothing(t *testing.T) {
	cli := testutil.RequireDocker(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		tmp, ws := t.TempDir(), t.TempDir()
		cmd := exec.Command(testutil.Binary(t), "exec", "--workspace", ws, "--network", "proxy", "--", "touch started; sleep 300")
		cmd.Env = append(baseEnv(t), "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		testutil.Eventually(t, 60*time.Second, "the command to start", func() bool {
			return inSandbox(cmd.Env, ws, "started")
		})
		if left, _ := os.ReadDir(tmp); len(left) != 1 || !strings.HasPrefix(left[0].Name(), "agentbox-net-") {
			t.Fatalf("%v: socket directory: %v", sig, left)
		}
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
		if sig == syscall.SIGKILL {
			if r := agentbox(t, nil, "gc"); r.code != 0 {
				t.Fatalf("gc: %d %q", r.code, r.stderr)
			}
		}
		testutil.Eventually(t, 30*time.Second, "no container", func() bool { return ownerOf(t, cli, cmd.Process.Pid) == "" })
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%v: left in TMPDIR: %v", sig, left)
		}
	}
}

// proxyFetch is a host-side upstream on loopback and a sandbox command
// that fetches it and a name outside every allowlist through the proxy,
// printing the body or the proxy's status and message.
type proxyFetch struct {
	hits *atomic.Int64 // requests the upstream served
	port string
	cmd  string
}

func newProxyFetch(t *testing.T) proxyFetch {
	t.Helper()
	f := proxyFetch{hits: new(atomic.Int64)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		fmt.Fprint(w, "upstream-ok")
	}))
	t.Cleanup(up.Close)
	_, f.port, _ = net.SplitHostPort(up.Listener.Addr().String())
	script := `import urllib.request, urllib.error
for u in ["http://localhost:` + f.port + `/x", "http://example.invalid/y"]:
    try:
        print(urllib.request.urlopen(u, timeout=20).read().decode())
    except urllib.error.HTTPError as e:
        print(e.code, e.read().decode().strip())`
	// NO_PROXY keeps localhost direct by default (it is the sandbox's
	// own); here the test's upstream is the host's, so unset it.
	f.cmd = "env -u NO_PROXY -u no_proxy python3 - <<'EOF'\n" + script + "\nEOF"
	return f
}
