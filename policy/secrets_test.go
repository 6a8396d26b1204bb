package policy

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const credsPolicy = `version: 1
sandbox:
  network: proxy
network:
  allow: ["api.example.com", "example.com", "@pypi", "127.0.0.1"]
  rules:
    - {host: api.example.com, methods: [GET, POST], paths: ["/repos/me/proj/**"], action: allow}
    - {host: api.example.com, paths: ["/admin/**", "/user/keys"], action: deny}
    - {host: "127.0.0.1", methods: [DELETE], action: deny}
secrets:
  TOKEN: {from: "env:CREDS_TEST_TOKEN", hosts: [api.example.com, "127.0.0.1"]}
  PUSH: {from: "env:CREDS_TEST_TOKEN", hosts: [example.com], during: ["git push"]}
`

func TestHTTPRulesDecide(t *testing.T) {
	p, err := Parse("creds.yaml", []byte(credsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Intercepts() {
		t.Fatal("a policy with rules and secrets must intercept")
	}
	api := NetTarget{Host: "api.example.com", Port: 443}
	cases := []struct {
		t            NetTarget
		method, path string
		want         Verdict
		rule         string
	}{
		{api, "GET", "/repos/me/proj/pulls", Allow, "network.rules[0]"},
		{api, "DELETE", "/repos/me/proj/pulls", Allow, ""}, // no rule matches: allowed host
		{api, "GET", "/admin/users", Deny, "network.rules[1]"},
		{api, "POST", "/user/keys", Deny, "network.rules[1]"},
		{api, "GET", "/user/keys/1", Allow, ""},
		{NetTarget{Host: "example.com", Port: 443}, "GET", "/admin/x", Allow, ""},
		{NetTarget{Host: "127.0.0.1", IP: mustAddr("127.0.0.1"), Port: 8443}, "DELETE", "/x", Deny, "network.rules[2]"},
	}
	for _, c := range cases {
		d := p.DecideRequest(c.t, c.method, c.path)
		if d.Verdict != c.want || d.Rule != c.rule {
			t.Errorf("%s %s%s = %v %q (%s); want %v %q", c.method, c.t, c.path, d.Verdict, d.Rule, d.Reason, c.want, c.rule)
		}
		if c.rule != "" && !strings.Contains(d.Text, "action:") {
			t.Errorf("rule text %q does not spell the rule out", d.Text)
		}
	}
	if d := p.DecideConnect(NetTarget{Host: "files.pythonhosted.org", Port: 443}); d.Verdict != Allow || !strings.Contains(d.Pattern, "@pypi") {
		t.Errorf("@pypi did not allow files.pythonhosted.org:443: %+v", d)
	}
	if d := p.DecideConnect(NetTarget{Host: "files.pythonhosted.org", Port: 80}); d.Verdict != Deny {
		t.Errorf("@pypi allowed port 80: %+v", d)
	}
}

func TestSecretsHostsAndDuring(t *testing.T) {
	p, err := Parse("creds.yaml", []byte(credsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	ss := p.Secrets()
	if len(ss) != 2 || ss[0].Name != "PUSH" || ss[1].Name != "TOKEN" {
		t.Fatalf("secrets = %+v", ss)
	}
	push, tok := ss[0], ss[1]
	if !tok.MatchesHost(NetTarget{Host: "api.example.com", Port: 443}) || tok.MatchesHost(NetTarget{Host: "example.com", Port: 443}) {
		t.Error("TOKEN hosts match wrongly")
	}
	for script, want := range map[string]bool{
		"git push origin main":          true,
		"cd x && git push":              true,
		"timeout 10 git push":           true,
		"git status":                    false,
		"echo git push":                 false,
		"":                              false,
		"curl https://example.com/ --x": false,
	} {
		if got := p.SecretDuring(push, script); got != want {
			t.Errorf("SecretDuring(PUSH, %q) = %v, want %v", script, got, want)
		}
	}
	if !p.SecretDuring(tok, "") {
		t.Error("a secret without during must be usable at any time")
	}
}

func TestSecretResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("file-value-123\n"), 0o600)
	t.Setenv("CREDS_TEST_TOKEN", "env-value-123")
	pol := `version: 1
sandbox: {network: proxy}
network: {allow: [example.com]}
secrets:
  A: {from: "env:CREDS_TEST_TOKEN", hosts: [example.com]}
  B: {from: "file:` + file + `", hosts: [example.com]}
  C: {from: "command:echo command-value-123", hosts: [example.com]}
  D: {from: "env:CREDS_TEST_UNSET", hosts: [example.com]}
  E: {from: "command:echo short", hosts: [example.com]}
`
	p, err := Parse("r.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "env-value-123", "B": "file-value-123", "C": "command-value-123", "D": "", "E": ""}
	for _, s := range p.Secrets() {
		v, err := s.Resolve(context.Background())
		if v != want[s.Name] || (want[s.Name] == "") != (err != nil) {
			t.Errorf("%s: Resolve = %q, %v; want %q", s.Name, v, err, want[s.Name])
		}
	}
}

func TestPresetsParse(t *testing.T) {
	for name := range netPresets {
		rs, err := parseNetEntry("network.allow[0]", "@"+name)
		if err != nil || len(rs) == 0 {
			t.Errorf("@%s: %v", name, err)
		}
	}
}
func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestParseLeavesHostSourcesToLoad(t *testing.T) {
	pol := []byte(`version: 1
sandbox: {network: proxy}
network: {allow: [example.com], upstream_ca: /nonexistent/ca.pem}
secrets:
  A: {from: "file:/nonexistent/token", hosts: [example.com]}
  B: {from: "command:/nonexistent/helper", hosts: [example.com]}
`)
	if _, err := Parse("in-sandbox.yaml", pol); err != nil {
		t.Errorf("Parse (the executor's, no host I/O): %v", err)
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, pol, 0o600)
	_, err := Load(path)
	if err == nil || len(LoadErrors(err)) != 3 {
		t.Errorf("Load must check the host's sources: %v", err)
	}
}

// A file: source that is a FIFO with no writer must not block Load (it is
// only checked for readability; the value is read when a session starts).
func TestLoadDoesNotBlockOnFIFOSource(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	path := filepath.Join(dir, "p.yaml")
	os.WriteFile(path, []byte(`version: 1
sandbox: {network: proxy}
network: {allow: [example.com]}
secrets:
  A: {from: "file:`+fifo+`", hosts: [example.com]}
`), 0o600)
	done := make(chan error, 1)
	go func() { _, err := Load(path); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Load with a FIFO source: %v", err)
		}
	case <-time.After(30 * time.Second):
		// Unblock the opener so the goroutine ends with the test.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load blocked opening a FIFO named by a file: secret source")
	}
}
