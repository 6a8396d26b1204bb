package main_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestProxyRefusalSaysWhy: a host the policy does not allow is refused
// with HTTP 403 whose status line (all a CONNECT client like pip shows)
// and body name the host, the rule and the fix; the audit's net record
// has the rule. Plain HTTP and a CONNECT tunnel alike.
func TestProxyRefusalSaysWhy(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "get.py"), `import sys, urllib.request, urllib.error
for u in sys.argv[1:]:
    try:
        urllib.request.urlopen(u, timeout=30)
        print("GOT", u)
    except urllib.error.HTTPError as e:
        print("HTTP", e.code, e.reason, "|", e.read().decode().strip())
    except Exception as e:
        print("ERR", e)
`, 0o644)
	pol := writeFile(t, filepath.Join(dir, "p.yaml"), "version: 1\nsandbox: {network: proxy}\nnetwork:\n  allow: [\"example.org\"]\n", 0o644)
	log := filepath.Join(dir, "a.jsonl")
	r := agentbox(t, nil, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--",
		"python3 get.py http://blocked.example.com/x https://blocked.example.com/y")
	out := r.stdout + r.stderr
	for _, want := range []string{
		"HTTP 403 Forbidden (agentbox: blocked.example.com:80 refused: not in network.allow (add the host to network.allow in the policy to allow it))",
		"| agentbox: blocked.example.com:80 refused: not in network.allow",
		"Tunnel connection failed: 403 Forbidden (agentbox: blocked.example.com:443 refused: not in network.allow",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	// A 502 status, not the digits inside a temporary directory's name
	// (a CI run's path held "…955028…").
	if regexp.MustCompile(`(^|[^0-9])502([^0-9]|$)`).MatchString(out) {
		t.Errorf("a refusal answered 502:\n%s", out)
	}
	n := 0
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == audit.EventNet && strings.Contains(string(l.raw), "blocked.example.com") {
			n++
			if l.rec.Rule != "network.allow" || l.rec.Decision != "deny" || !strings.Contains(string(l.raw), "not in network.allow") {
				t.Errorf("net record: %s", l.raw)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d net records for blocked.example.com, want 2", n)
	}
}
