package policy

import (
	"fmt"
	"strings"
	"testing"
)

// TestSecretScope: a portless hosts entry means 443; headers default to
// Authorization and are canonicalised; allow_plaintext is off by default;
// headers that frame or route a request are refused.
func TestSecretScope(t *testing.T) {
	p, err := Parse("s.yaml", []byte(`version: 1
sandbox: {network: proxy}
network: {allow: ["api.example.com", "example.com"]}
secrets:
  A: {from: "env:A_TOKEN", hosts: [api.example.com]}
  B: {from: "env:B_TOKEN", hosts: ["example.com:8443"], headers: [x-api-key, Authorization], allow_plaintext: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Secrets()
	a, b := s[0], s[1]
	if !a.MatchesHost(NetTarget{Host: "api.example.com", Port: 443}) || a.MatchesHost(NetTarget{Host: "api.example.com", Port: 80}) || a.MatchesHost(NetTarget{Host: "api.example.com", Port: 8443}) {
		t.Error("a portless secret host must mean 443 only")
	}
	if fmt.Sprint(a.Headers) != "[Authorization]" || a.AllowPlaintext {
		t.Errorf("defaults: headers %v, allow_plaintext %v", a.Headers, a.AllowPlaintext)
	}
	if fmt.Sprint(b.Headers) != "[X-Api-Key Authorization]" || !b.AllowPlaintext || !b.MatchesHost(NetTarget{Host: "example.com", Port: 8443}) {
		t.Errorf("B: %v %v", b.Headers, b.AllowPlaintext)
	}
	for _, bad := range []string{"headers: [Host]", "headers: [Content-Length]", `headers: ["X Y"]`, "headers: [Proxy-Authorization]", "allow_plaintext: yes please"} {
		_, err := Parse("s.yaml", []byte("version: 1\nsandbox: {network: proxy}\nnetwork: {allow: [a.example.com]}\nsecrets:\n  A: {from: \"env:A_TOKEN\", hosts: [a.example.com], "+bad+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "secrets.A.") {
			t.Errorf("%s: %v, want an error naming the field", bad, err)
		}
	}
}

// TestDuringProgram: during matches one program of the chain, taken
// literally (git's global options skipped), never a shell's script.
func TestDuringProgram(t *testing.T) {
	p, err := Parse("s.yaml", []byte(`version: 1
sandbox: {network: proxy}
network: {allow: ["example.com"]}
secrets:
  A: {from: "env:A_TOKEN", hosts: [example.com], during: ["git push"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Secrets()[0]
	script := []string{"bash", "-c", "git push; python3 x.py"}
	for _, c := range []struct {
		chain [][]string
		want  bool
	}{
		{[][]string{{"git-remote-https", "origin"}, {"git", "push", "origin"}, script}, true},
		{[][]string{{"/usr/bin/git", "-C", "/w", "-c", "a.b=c", "push"}}, true},
		{[][]string{{"python3", "x.py"}, script}, false},
		{[][]string{{"/usr/bin/python3.11", "push"}}, false},
		{[][]string{{"git", "pull"}, {"sh", "-c", "git push"}}, false},
		{nil, false},
	} {
		if _, got := s.DuringProgram(c.chain); got != c.want {
			t.Errorf("%q: %v, want %v", c.chain, got, c.want)
		}
	}
}
