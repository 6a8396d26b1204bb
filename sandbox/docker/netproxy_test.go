package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// testResolver maps the test names to the host's loopback.
type testResolver struct{}

func (testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "allowed.test", "refused.test", "other.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// netSetup is a proxy session against upstream servers on the host's
// loopback, recording to its own audit log.
type netSetup struct {
	s        sandbox.Session
	log      *audit.Writer
	logPath  string
	key      []byte
	upstream string // port of the plain HTTP upstream
	hits     *sync.Map
	channel  bool // over the executor channel, not the socket
}

const netPolicy = `version: 1
extends: none
sandbox:
  network: proxy
network:
  allow: ["allowed.test", "127.0.0.0/8"]
  deny: ["other.test"]
`

func startNet(t *testing.T, rt string, opts ...func(*sandbox.Config)) *netSetup {
	t.Helper()
	hits := &sync.Map{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.Host+r.URL.Path, true)
		fmt.Fprintf(w, "hello from upstream %s", r.URL.Path)
	}))
	t.Cleanup(up.Close)
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	p, err := policy.Parse("net.yaml", []byte(netPolicy))
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath, audit.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cfg := testutil.Config(t, t.TempDir())
	cfg.Runtime = rt
	cfg.Network = sandbox.NetworkProxy
	eg := agent.NewEgress(p, log)
	eg.Resolver = testResolver{}
	eg.OnError = func(err error) { t.Error(err) }
	cfg.Egress = eg
	for _, o := range opts {
		o(&cfg)
	}
	s := testutil.StartWith(t, cfg)
	return &netSetup{s: s, log: log, logPath: logPath, key: key, upstream: port, hits: hits, channel: cfg.ProxyOverChannel}
}

func (n *netSetup) py(t *testing.T, code string) string {
	t.Helper()
	res := sandboxtest.Exec(t, n.s, "python3 - <<'EOF'\n"+code+"\nEOF", 60*time.Second) // python under gVisor on a loaded 2-core host can take a while to start
	return strings.TrimSpace(string(res.Output))
}

// netRecords returns the net records of the log.
func (n *netSetup) netRecords(t *testing.T) []*audit.Record {
	t.Helper()
	f, err := os.Open(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*audit.Record
	all, err := audit.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		if all[i].Event == audit.EventNet {
			out = append(out, &all[i])
		}
	}
	return out
}

func testProxyFromInside(t *testing.T, rt string, opts ...func(*sandbox.Config)) {
	n := startNet(t, rt, opts...)
	fetch := `import urllib.request, urllib.error, sys
try:
    print(urllib.request.urlopen(sys.argv[1] if len(sys.argv) > 1 else URL, timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e)`
	get := func(url string) string { return n.py(t, "URL = "+fmt.Sprintf("%q", url)+"\n"+fetch) }

	if got := get("http://allowed.test:" + n.upstream + "/a"); got != "hello from upstream /a" {
		t.Errorf("allowed fetch: %q", got)
	}
	got := get("http://refused.test:" + n.upstream + "/b")
	if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "network.allow") {
		t.Errorf("refused host: %q, want a 403 naming network.allow", got)
	}
	got = get("http://other.test:" + n.upstream + "/c")
	if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "network.deny") {
		t.Errorf("denied host: %q, want a 403 naming network.deny", got)
	}
	// CONNECT through the forwarder, plain HTTP inside the tunnel.
	tunnel := n.py(t, `import http.client
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
c.set_tunnel("allowed.test", `+n.upstream+`)
c.request("GET", "/tunnel")
print(c.getresponse().read().decode())`)
	if tunnel != "hello from upstream /tunnel" {
		t.Errorf("CONNECT tunnel: %q", tunnel)
	}
	if _, ok := n.hits.Load("refused.test:" + n.upstream + "/b"); ok {
		t.Error("a refused request reached the upstream")
	}

	// Bypassing the proxy: no DNS, no route to the host or the bridge.
	direct := n.py(t, `import socket
for target in [("172.17.0.1", `+n.upstream+`), ("10.0.0.1", 80), ("8.8.8.8", 53), ("allowed.test", `+n.upstream+`)]:
    try:
        s = socket.create_connection(target, timeout=5)
        print("CONNECTED", target)
    except Exception as e:
        print("failed", target[0])
try:
    socket.getaddrinfo("allowed.test", 80)
    print("RESOLVED")
except Exception:
    print("no-dns")
import os
print(sorted(os.listdir("/sys/class/net")))`)
	if strings.Contains(direct, "CONNECTED") || strings.Contains(direct, "RESOLVED") || !strings.Contains(direct, "no-dns") || !strings.Contains(direct, "['lo']") {
		t.Errorf("a direct connection bypassed the proxy:\n%s", direct)
	}
	env := sandboxtest.Exec(t, n.s, "env | grep -i _proxy= | sort | tr '\\n' ' '", 10*time.Second)
	if !strings.Contains(string(env.Output), "HTTPS_PROXY=http://127.0.0.1:3128") {
		t.Errorf("proxy env: %q", env.Output)
	}

	// Every attempt audited: 4 proxied attempts (the probe is not one).
	var recs []*audit.Record
	testutil.Eventually(t, 20*time.Second, "4 net records", func() bool { recs = n.netRecords(t); return len(recs) >= 4 })
	byHost := map[string]string{}
	for _, r := range recs {
		byHost[r.NetHost] += r.Decision + " "
	}
	if byHost["allowed.test"] != "allow allow " || byHost["refused.test"] != "deny " || byHost["other.test"] != "deny " || len(recs) != 4 {
		t.Errorf("net records: %v (%d)", byHost, len(recs))
	}

	// Nothing left after the session: no container, socket, goroutine.
	cli := testutil.RequireDocker(t)
	ins, err := cli.ContainerInspect(context.Background(), n.s.Info().ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	var sock string
	for _, m := range ins.Mounts {
		if m.Destination == sandbox.ProxySocket {
			sock = m.Source
		}
	}
	if (sock == "") != n.channel || string(ins.HostConfig.NetworkMode) != "none" {
		t.Fatalf("over the channel %v: mounts %+v network %q", n.channel, ins.Mounts, ins.HostConfig.NetworkMode)
	}
	if err := n.s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sock != "" {
		if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
			t.Errorf("socket directory left behind: %v", err)
		}
	}
	if left := testutil.Leftovers(t, cli, n.s.ID()); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	testutil.Eventually(t, 10*time.Second, "no proxy goroutine", func() bool {
		buf := make([]byte, 1<<20)
		st := string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(st, "docker.(*egressServer)") && !strings.Contains(st, "netproxy.") && !strings.Contains(st, "wire.(*relay)")
	})
	n.log.Close()
	f, err := os.Open(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f, n.key, "")
	if err != nil || !rep.Intact || rep.Records != 4 {
		t.Errorf("audit verify: %v %+v", err, rep)
	}
}

func TestNetworkProxyFromInside(t *testing.T) { testProxyFromInside(t, "") }

// TestNetworkProxyUnderGVisor needs the engine's runsc runtime registered
// with --host-uds=open (so the mounted host socket can be connected).
func TestNetworkProxyUnderGVisor(t *testing.T) {
	cli := testutil.RequireDocker(t)
	info, err := cli.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Runtimes["runsc"]; !ok {
		t.Skip("the engine has no runsc runtime")
	}
	testProxyFromInside(t, "runsc")
}

// TestNetworkProxyStartFailures: proxy without an Egress is refused, and
// a start that fails after the socket was made leaves no socket behind.
func TestNetworkProxyStartFailures(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rt := testutil.Runtime(t)
	cfg := testutil.Config(t, t.TempDir())
	cfg.Network = sandbox.NetworkProxy
	if _, err := rt.Start(context.Background(), cfg); !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("proxy without Egress: %v, want ErrConfig", err)
	}
	p, err := policy.Parse("net.yaml", []byte(netPolicy))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Egress = agent.NewEgress(p, nopLog{})
	cfg.Runtime = "agentbox-no-such-runtime"
	if _, err := rt.Start(context.Background(), cfg); err == nil {
		t.Fatal("started with a missing runtime")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

type nopLog struct{}

func (nopLog) Append(*audit.Record) error { return nil }

// TestNetworkProxyOtherUser: a sandbox user other than the socket's owner
// can still connect the proxy socket (and only through it).
func TestNetworkProxyOtherUser(t *testing.T) {
	n := startNet(t, "", func(c *sandbox.Config) { c.User = "65534:65534" })
	got := n.py(t, `import urllib.request, os
print(os.getuid(), urllib.request.urlopen("http://allowed.test:`+n.upstream+`/u", timeout=20).read().decode())`)
	if got != "65534 hello from upstream /u" {
		t.Errorf("as uid 65534: %q", got)
	}
}
