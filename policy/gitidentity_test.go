package policy

import (
	"strings"
	"testing"
	"time"
)

// sandbox.git_identity is host, none or "Name <email>", nothing else;
// timeouts.call_max bounds a call's own timeout and is never below call.
func TestGitIdentityAndCallMax(t *testing.T) {
	for v, want := range map[string][2]string{
		`host`: {"", ""}, `none`: {"", ""},
		`"Ada Lovelace <ada@example.com>"`: {"Ada Lovelace", "ada@example.com"},
		`"Bot  <b@x.y>"`:                   {"Bot", "b@x.y"},
	} {
		p, err := Parse("p.yaml", []byte("version: 1\nsandbox:\n  git_identity: "+v+"\n"))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		n, e, _ := ParseGitIdentity(p.Sandbox.GitIdentity)
		if n != want[0] || e != want[1] {
			t.Errorf("%s: %q %q", v, n, e)
		}
	}
	for _, v := range []string{`""`, `Host`, `"Ada"`, `"ada@example.com"`, `"<a@b>"`, `"Ada <a b@c>"`, `"Ada <a@b> x"`,
		`"Ada <a@b@c>"`, `"Ada <>"`, `"A<da <a@b>"`, `"Ada\n <a@b>"`, `"Ada <a@b>\n"`, `[host]`, `1`} {
		_, err := Parse("p.yaml", []byte("version: 1\nsandbox:\n  git_identity: "+v+"\n"))
		if err == nil || !strings.Contains(err.Error(), "sandbox.git_identity") {
			t.Errorf("git_identity %s was accepted: %v", v, err)
		}
	}
	p, err := Parse("p.yaml", []byte("version: 1\nsandbox:\n  timeouts: {call: 15m}\n"))
	if err != nil || p.Sandbox.CallTimeoutMax != 15*time.Minute {
		t.Errorf("call 15m without call_max: %v %+v", err, p.Sandbox)
	}
	p, err = Parse("p.yaml", []byte("version: 1\nsandbox:\n  timeouts: {call: 30s, call_max: 5m}\n"))
	if err != nil || p.Sandbox.CallTimeout != 30*time.Second || p.Sandbox.CallTimeoutMax != 5*time.Minute {
		t.Errorf("call_max 5m: %v %+v", err, p.Sandbox)
	}
	if _, err := Parse("p.yaml", []byte("version: 1\nsandbox:\n  timeouts: {call: 5m, call_max: 1m}\n")); err == nil || !strings.Contains(err.Error(), "sandbox.timeouts.call_max") {
		t.Errorf("call_max below call: %v", err)
	}
	b, _ := Parse("b.yaml", []byte("version: 1\n"))
	n, _ := Parse("n.yaml", []byte("version: 1\nsandbox:\n  timeouts: {call_max: 1h}\n"))
	found := false
	for _, f := range CompareSettings(n, b) {
		found = found || f.Field == "sandbox.timeouts.call_max"
	}
	if !found {
		t.Errorf("a longer call_max is not reported as looser: %+v", CompareSettings(n, b))
	}
}
