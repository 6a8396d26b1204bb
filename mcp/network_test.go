package mcp_test

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// proxyPolicy: network proxy with nothing allowed; python3 may run.
const proxyPolicy = `version: 1
extends: none
sandbox:
  network: proxy
  timeouts: {call: 20s}
commands:
  default: deny
  allow: [python3]
network:
  allow: []
`

// `agentbox mcp` with network: proxy serves the host-side proxy too: a
// request from inside gets the proxy's 403 naming the rule (not a
// sandbox that cannot start), and the attempt is a net audit record.
func TestMCPNetworkProxy(t *testing.T) {
	s := newServerWith(t, proxyPolicy)
	cs := s.connect(t, nil, nil)
	out, isErr := call(t, cs, "execute_bash", map[string]any{"command": `python3 -c '
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://example.invalid/", timeout=10)
except urllib.error.HTTPError as e:
    print("status", e.code, e.read().decode().strip())
'`})
	if isErr || !strings.Contains(out, "status 403") || !strings.Contains(out, "network.allow") {
		t.Fatalf("isError %v, output:\n%s", isErr, out)
	}
	_ = cs.Close()
	rec := s.waitFor(t, "a net record", func(r audit.Record) bool { return r.Event == audit.EventNet })
	if rec.Decision != "deny" || rec.NetHost != "example.invalid" {
		t.Errorf("net record: %+v", rec)
	}
	s.verify(t)
}
