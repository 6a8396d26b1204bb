package agent

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

type memStore struct{ p []string }

func (m *memStore) Prefixes() []string   { return m.p }
func (m *memStore) Add(p []string) error { m.p = append(m.p, p...); return nil }
func (m *memStore) Where() string        { return "memory" }
func askCmd(t *testing.T, cmd string) ApprovalRequest {
	t.Helper()
	d := policy.Default().Decide(policy.Action{Kind: policy.Command, Command: cmd})
	if d.Verdict != policy.Ask {
		t.Fatalf("%q: want ask, got %s", cmd, d.Verdict)
	}
	return ApprovalRequest{Tool: ToolExecuteBash, Subject: cmd, Decision: d}
}

// "r" denies with the user's reason as the note the model sees.
func TestPromptReasonGoesToModel(t *testing.T) {
	p := NewPrompt(strings.NewReader("r\nuse make instead\n"), io.Discard)
	ap, err := p.Approve(context.Background(), askCmd(t, "frob-tool x"))
	if err != nil || ap.Allow || !strings.Contains(ap.Note, "use make instead") {
		t.Fatalf("%+v %v", ap, err)
	}
	if txt := denialText(ToolExecuteBash, askCmd(t, "frob-tool x").Decision, policy.Deny, ap.Note); !strings.Contains(txt, "use make instead") {
		t.Errorf("the model is not told: %s", txt)
	}
}

// With a store, "always" works for a command no rule matched, as its exact
// prefix, and Remembered allows it later without asking; a script with
// another asking command still asks.
func TestAlwaysSavedAsPrefix(t *testing.T) {
	st := &memStore{}
	p := NewPrompt(strings.NewReader("a\n"), io.Discard)
	p.Store = st
	ap, err := p.Approve(context.Background(), askCmd(t, "frob-tool x"))
	if err != nil || !ap.Allow || len(st.p) != 1 || st.p[0] != "frob-tool x" {
		t.Fatalf("%+v %v %v", ap, err, st.p)
	}
	r := Remembered{Store: st, Next: DenyAll{}}
	if ap, _ := r.Approve(context.Background(), askCmd(t, "frob-tool x --more")); !ap.Allow {
		t.Errorf("remembered prefix not allowed: %+v", ap)
	}
	for _, cmd := range []string{"frob-tool y", "frob-tool x; other-tool z", "frob-toolx"} {
		if ap, _ := r.Approve(context.Background(), askCmd(t, cmd)); ap.Allow {
			t.Errorf("%q allowed by the prefix `frob-tool x`", cmd)
		}
	}
}
