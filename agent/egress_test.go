package agent

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

type recLog struct {
	mu   sync.Mutex
	recs []*audit.Record
}

func (l *recLog) Append(r *audit.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}

func TestEgressRecordsRefusal(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nextends: none\nsandbox:\n  network: proxy\nnetwork:\n  allow: [\"pypi.org\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	ctx := context.Background()
	cfg, err := WithEgress(ctx, sandbox.Config{Network: sandbox.NetworkProxy}, p, log)
	none, err2 := WithEgress(ctx, sandbox.Config{Network: sandbox.NetworkNone}, p, log)
	if err != nil || err2 != nil || cfg.Egress == nil || none.Egress != nil {
		t.Fatal("WithEgress: an Egress for proxy only")
	}
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() { defer close(done); cfg.Egress.ServeEgress(context.Background(), "sess-1", server) }()
	go io.WriteString(client, "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	b, _ := io.ReadAll(client)
	<-done
	if !strings.HasPrefix(string(b), "HTTP/1.1 403") || !strings.Contains(string(b), "network.allow") {
		t.Errorf("answer %q", b)
	}
	if len(log.recs) != 1 || log.recs[0].Session != "sess-1" || log.recs[0].Event != audit.EventNet || log.recs[0].Decision != "deny" || log.recs[0].NetHost != "evil.test" {
		t.Errorf("records %+v", log.recs)
	}
}

func TestProxyDescribedToModel(t *testing.T) {
	info := ToolInfo{Network: sandbox.NetworkProxy, CallTimeout: 1, OutputCap: 1}
	if s := SystemPrompt(PromptInput{Info: info}); !strings.Contains(s, "HTTP(S) proxy") || !strings.Contains(s, "403") {
		t.Errorf("system prompt does not describe the proxy:\n%s", s)
	}
	if s := sandboxNote(info); !strings.Contains(s, "proxy") || !strings.Contains(s, "403") {
		t.Errorf("tool note: %s", s)
	}
}

func TestWithEgressBrokersSecrets(t *testing.T) {
	const value = "host-only-value-42424242"
	t.Setenv("AGENT_BROKER_TOKEN", value)
	t.Setenv("AGENT_BROKER_COPY", "x"+value)
	pol := "version: 1\nextends: none\nsandbox:\n  network: proxy\n  env: [AGENT_BROKER_TOKEN]\nnetwork:\n  allow: [\"api.example.com\"]\nsecrets:\n  AGENT_BROKER_TOKEN: {from: \"env:AGENT_BROKER_TOKEN\", hosts: [api.example.com]}\n"
	p, err := policy.Parse("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := WithEgress(context.Background(), SandboxConfig(p, t.TempDir()), p, &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	ph := cfg.Env["AGENT_BROKER_TOKEN"]
	if !strings.HasPrefix(ph, PlaceholderPrefix) || len(cfg.TrustPEM) == 0 || cfg.Env["SSL_CERT_FILE"] != sandbox.CABundlePath {
		t.Fatalf("sandbox env %v, trust %d bytes", cfg.Env, len(cfg.TrustPEM))
	}
	for k, v := range cfg.Env {
		if strings.Contains(v, value) {
			t.Errorf("the sandbox env carries the value in %s", k)
		}
	}
	if strings.Contains(string(cfg.TrustPEM), "PRIVATE") {
		t.Error("the CA key would enter the sandbox")
	}
	// Another passed variable holding the value refuses the session.
	p2, err := policy.Parse("p.yaml", []byte(strings.Replace(pol, "env: [AGENT_BROKER_TOKEN]", "env: [AGENT_BROKER_COPY]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WithEgress(context.Background(), SandboxConfig(p2, t.TempDir()), p2, &recLog{}); err == nil || !strings.Contains(err.Error(), "AGENT_BROKER_COPY") {
		t.Errorf("a copy of the value in sandbox.env: %v", err)
	}
	t.Setenv("AGENT_BROKER_TOKEN", "")
	if _, err := WithEgress(context.Background(), SandboxConfig(p, t.TempDir()), p, &recLog{}); err == nil || !strings.Contains(err.Error(), "empty or unset") {
		t.Errorf("an unset secret: %v", err)
	}
}

func TestWithEgressKeepsSecretsOutWithoutProxy(t *testing.T) {
	const value = "host-only-value-42424242"
	t.Setenv("AGENT_BROKER_TOKEN", value)
	t.Setenv("AGENT_BROKER_COPY", value)
	pol := "version: 1\nextends: none\nsandbox:\n  network: proxy\n  env: [AGENT_BROKER_TOKEN]\nnetwork:\n  allow: [\"api.example.com\"]\nsecrets:\n  AGENT_BROKER_TOKEN: {from: \"env:AGENT_BROKER_TOKEN\", hosts: [api.example.com]}\n"
	p, err := policy.Parse("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []sandbox.NetworkMode{sandbox.NetworkNone, sandbox.NetworkOpen} {
		cfg := SandboxConfig(p, t.TempDir())
		cfg.Network = mode // --network overrides the policy's
		got, err := WithEgress(context.Background(), cfg, p, &recLog{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Env["AGENT_BROKER_TOKEN"]; ok {
			t.Errorf("%s: the secret's variable is passed without a broker", mode)
		}
	}
	p2, _ := policy.Parse("p.yaml", []byte(strings.Replace(pol, "env: [AGENT_BROKER_TOKEN]", "env: [AGENT_BROKER_COPY]", 1)))
	cfg := SandboxConfig(p2, t.TempDir())
	cfg.Network = sandbox.NetworkOpen
	if _, err := WithEgress(context.Background(), cfg, p2, &recLog{}); err == nil {
		t.Error("a copy of the value passed into an open sandbox")
	}
}
