package main_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// blockedRegistry is a registry host no policy here allows: the proxy
// refuses it by name, before resolving it.
const blockedRegistry = "blocked.registry.test"

// registrySession runs commands in a toolchain image under `network:
// proxy` with the test's registries allowed by an IP rule (their address
// and port) and nothing else, recording to one audit log.
type registrySession struct {
	reg   *registry
	image string
	pol   string
	log   string
}

func newRegistrySession(t *testing.T, image string) *registrySession {
	t.Helper()
	testutil.RequireImage(t, image)
	reg := serveRegistry(t, blockedRegistry)
	dir := t.TempDir()
	pol := writeFile(t, filepath.Join(dir, "registries.yaml"), fmt.Sprintf(`version: 1
extends: none
commands: {default: allow, dynamic: allow}
sandbox:
  network: proxy
  timeouts: {call: 300s}
network:
  allow: [%q]
`, reg.addr), 0o644)
	return &registrySession{reg: reg, image: image, pol: pol, log: filepath.Join(dir, "audit.jsonl")}
}

// exec runs cmd in a fresh sandbox on workspace ws.
func (r *registrySession) exec(t *testing.T, ws, cmd string) result {
	t.Helper()
	return agentbox(t, nil, "exec", "--workspace", ws, "--policy", r.pol, "--audit", r.log, "--image", r.image, "--", cmd)
}

// netDecisions are the log's net records as "decision host:port reason".
func (r *registrySession) netDecisions(t *testing.T) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, l := range readAuditLog(t, r.log) {
		if l.rec.Event == audit.EventNet {
			out = append(out, l.rec)
		}
	}
	return out
}

// checkProxied asserts that the package manager reached the registry
// through the proxy (allowed net records for its address: the sandbox has
// no other way out) and that the blocked host was refused with the
// proxy's reason, naming the host and the rule.
func (r *registrySession) checkProxied(t *testing.T) {
	t.Helper()
	var allowed, denied int
	for _, rec := range r.netDecisions(t) {
		switch {
		case rec.Decision == "allow" && net.JoinHostPort(rec.NetHost, fmt.Sprint(rec.NetPort)) == r.reg.addr:
			allowed++
		case rec.Decision == "deny" && rec.NetHost == blockedRegistry:
			denied++
			if rec.Rule != "network.allow" || !strings.Contains(rec.Reason, "not in network.allow") {
				t.Errorf("the refusal of %s does not name the rule: rule %q reason %q", blockedRegistry, rec.Rule, rec.Reason)
			}
		default:
			t.Errorf("unexpected net record: %s %s:%d %s", rec.Decision, rec.NetHost, rec.NetPort, rec.Reason)
		}
	}
	if allowed == 0 || denied == 0 {
		t.Errorf("net records: %d allowed to %s, %d refused for %s; want both", allowed, r.reg.addr, denied, blockedRegistry)
	}
}

// pip installs a real wheel from a PEP 503 simple index through the
// proxy (the python image's pip reads the standard proxy variables), and a
// wheel the index places on a host the policy does not allow is refused.
// The venv is made with --copies: a venv's default symlink to
// /usr/bin/python3 points outside the workspace, so it is held on the host
// (hazard:symlink-outside) and the venv would not work in a later session.
func TestPipInstallThroughProxy(t *testing.T) {
	r := newRegistrySession(t, "python")
	ws := t.TempDir()
	trusted := " --trusted-host " + r.reg.addr + " --trusted-host " + blockedRegistry + " "
	res := r.exec(t, ws, "python3 -m venv --copies /workspace/.venv && /workspace/.venv/bin/pip install --no-input --index-url http://"+r.reg.addr+"/simple/"+trusted+wheelName+
		" && /workspace/.venv/bin/python -c 'import "+wheelModule+"; print("+wheelModule+".greet())'")
	if res.code != 0 || !strings.Contains(res.stdout, "Successfully installed "+wheelName+"-"+fixtureVer) || !strings.Contains(res.stdout, "hello from the wheel") {
		t.Fatalf("pip install through the proxy: %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	// Another session with the same venv: an index whose file is on the
	// blocked host.
	res = r.exec(t, ws, "/workspace/.venv/bin/pip download --no-input --no-deps -d /tmp/dl --index-url http://"+r.reg.addr+"/blocked/simple/"+trusted+wheelName)
	if out := res.stdout + res.stderr; res.code == 0 || !strings.Contains(out, "403") || !strings.Contains(out, blockedRegistry) {
		t.Errorf("pip download from a host not allowed: %d, want a failure naming the 403 and %s\n%s\n%s", res.code, blockedRegistry, res.stdout, res.stderr)
	}
	if !r.reg.asked("/simple/"+wheelName+"/") || !r.reg.asked("/files/"+wheelModule+"-"+fixtureVer+"-py3-none-any.whl") {
		t.Errorf("the index was not asked for the wheel: %v", r.reg.hits)
	}
	r.checkProxied(t)
}

// npm installs a package from a registry document and its tarball through
// the proxy; a tarball on a host the policy does not allow is refused.
func TestNpmInstallThroughProxy(t *testing.T) {
	r := newRegistrySession(t, "node")
	ws := t.TempDir()
	npm := "cd /workspace && npm install --no-audit --registry http://" + r.reg.addr + "/ "
	res := r.exec(t, ws, npm+npmName+` && node -e 'console.log(require("`+npmName+`").greet())'`)
	if res.code != 0 || !strings.Contains(res.stdout, "hello from the tarball") {
		t.Fatalf("npm install through the proxy: %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = r.exec(t, ws, npm+"blocked-npm")
	if out := res.stdout + res.stderr; res.code == 0 || !strings.Contains(out, "403") || !strings.Contains(out, blockedRegistry) {
		t.Errorf("npm install from a host not allowed: %d, want a failure naming the 403 and %s\n%s\n%s", res.code, blockedRegistry, res.stdout, res.stderr)
	}
	r.checkProxied(t)
}

// go mod download fetches a module from a GOPROXY layout through the
// proxy; a GOPROXY the policy does not allow is refused, and go shows the
// proxy's reason (its "server response").
func TestGoModDownloadThroughProxy(t *testing.T) {
	r := newRegistrySession(t, "go")
	ws := t.TempDir()
	dl := "GOSUMDB=off go mod download -json " + goModule + "@v" + fixtureVer
	res := r.exec(t, ws, "GOPROXY=http://"+r.reg.addr+" "+dl)
	if res.code != 0 || !strings.Contains(res.stdout, `"Version": "v`+fixtureVer+`"`) || strings.Contains(res.stdout, `"Error"`) {
		t.Fatalf("go mod download through the proxy: %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = r.exec(t, ws, "GOPROXY=http://"+blockedRegistry+" "+dl)
	if out := res.stdout + res.stderr; res.code == 0 || !strings.Contains(out, "403") || !strings.Contains(out, "not in network.allow") {
		t.Errorf("go mod download from a host not allowed: %d, want a failure with the proxy's reason\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	r.checkProxied(t)
}
