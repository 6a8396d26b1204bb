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
	p, err := policy.Parse("p.yaml", []byte("version: 1\nsandbox:\n  network: proxy\nnetwork:\n  allow: [\"pypi.org\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	cfg := WithEgress(sandbox.Config{Network: sandbox.NetworkProxy}, p, log)
	if cfg.Egress == nil || WithEgress(sandbox.Config{Network: sandbox.NetworkNone}, p, log).Egress != nil {
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
