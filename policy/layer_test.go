package policy

import (
	"fmt"
	"strings"
	"testing"
)

// A README-sized policy (sandbox and network only) layers on the default:
// every protection it does not mention is the default's.
func TestSmallFileKeepsTheDefaultsProtections(t *testing.T) {
	p := parseT(t, "small.yaml", "version: 1\nsandbox:\n  network: proxy\nnetwork:\n  allow: [\"pypi.org\"]\n")
	if p.FromScratch() {
		t.Error("a file without extends: none is from scratch")
	}
	for _, c := range []struct {
		a    Action
		want Verdict
	}{
		{Action{Kind: Read, Path: ".env"}, Deny},
		{Action{Kind: Read, Path: "keys/id_rsa"}, Deny},
		{Action{Kind: Write, Path: ".git/hooks/pre-commit"}, Deny},
		{Action{Kind: Write, Path: ".envrc"}, Deny},
		{Action{Kind: Command, Command: "sudo id"}, Deny},
		{Action{Kind: Command, Command: "rm -rf /"}, Deny},
		{Action{Kind: Command, Command: "git push"}, Ask},
		{Action{Kind: Command, Command: "ls -la"}, Allow},
		{Action{Kind: Read, Path: "src/a.go"}, Allow},
	} {
		if d := p.Decide(c.a); d.Verdict != c.want {
			t.Errorf("%+v: %s (%s), want %s", c.a, d.Verdict, d.Reason, c.want)
		}
	}
	if len(p.Audit.Redact) == 0 || !p.Audit.Redact[0].MatchString("api_key=abc") {
		t.Errorf("redaction lost: %v", p.Audit.Redact)
	}
	if p.Sandbox.Network != "proxy" || p.Sandbox.Image != "agentbox/base:latest" || p.Sandbox.Pids != 256 {
		t.Errorf("sandbox: %+v", p.Sandbox)
	}
	if r := Within(p, Default(), nil); len(r.Looser) == 0 {
		t.Error("network: proxy is not looser than the default's none")
	} else {
		for _, f := range r.Looser {
			if !strings.HasPrefix(f.Field, "sandbox.network") && !strings.HasPrefix(f.Field, "network") {
				t.Errorf("looser than the default beyond the network it names: %s", f)
			}
		}
	}
}

// A list the file names replaces the default's; one starting with ...
// adds to it; a mapping merges key by key; an empty mapping changes
// nothing.
func TestLayerListsAndMappings(t *testing.T) {
	def := Default()
	rep := parseT(t, "rep.yaml", "version: 1\ncommands:\n  deny: [curl]\n")
	if d := rep.Decide(Action{Kind: Command, Command: "sudo id"}); d.Verdict == Deny {
		t.Errorf("a named deny list did not replace the default's: %s", d.Reason)
	}
	if d := rep.Decide(Action{Kind: Command, Command: "curl x"}); d.Verdict != Deny {
		t.Errorf("curl: %s", d.Reason)
	}
	ext := parseT(t, "ext.yaml", "version: 1\ncommands:\n  deny: [..., curl]\n  allow:\n    - ...\n    - docker ps\naudit:\nfiles:\n  read: {deny: [..., \"**/*.secret\"]}\n")
	for cmd, want := range map[string]Verdict{"sudo id": Deny, "curl x": Deny, "docker ps": Allow, "ls": Allow, "git push": Ask} {
		if d := ext.Decide(Action{Kind: Command, Command: cmd}); d.Verdict != want {
			t.Errorf("extended: %s: %s (%s), want %s", cmd, d.Verdict, d.Reason, want)
		}
	}
	for path, want := range map[string]Verdict{".env": Deny, "a.secret": Deny, "a.txt": Allow} {
		if d := ext.Decide(Action{Kind: Read, Path: path}); d.Verdict != want {
			t.Errorf("extended: read %s: %s, want %s", path, d.Verdict, want)
		}
	}
	if len(ext.Audit.Redact) != len(def.Audit.Redact) {
		t.Error("an empty audit: dropped the default's redaction")
	}
	if d := ext.Decide(Action{Kind: Command, Command: "curl x"}); d.Rule != fmt.Sprintf("commands.deny[%d]", len(def.cmd.lists[Deny])) {
		t.Errorf("an added rule is numbered after the default's: %s", d.Rule)
	}
	if r := Within(ext, def, nil); r.Holds() {
		t.Error("docker ps allowed, yet within the default")
	}
	if r := Within(parseT(t, "ext2.yaml", "version: 1\ncommands:\n  deny: [..., curl]\n"), def, nil); !r.Holds() {
		t.Errorf("only a deny rule added, yet looser than the default: %+v", r.Looser)
	}
}

// extends: none starts from nothing: the loader's own defaults, none of
// the default policy's rules.
func TestExtendsNone(t *testing.T) {
	p := parseT(t, "none.yaml", "version: 1\nextends: none\ncommands: {default: allow}\n")
	if !p.FromScratch() {
		t.Error("FromScratch")
	}
	for _, a := range []Action{{Kind: Command, Command: "sudo id"}, {Kind: Read, Path: ".env"}, {Kind: Write, Path: ".envrc"}} {
		if d := p.Decide(a); d.Verdict != Allow {
			t.Errorf("%+v: %s under extends: none", a, d.Verdict)
		}
	}
	if len(p.Audit.Redact) != 0 {
		t.Error("extends: none kept the default's redaction")
	}
	if !Default().FromScratch() && parseT(t, "d.yaml", "version: 1\nextends: default\n").FromScratch() {
		t.Error("extends: default is from scratch")
	}
}

// A file that does not layer is refused with file:line:col and the field.
func TestLayerErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"version: 1\ncommands: [ls]\n", "x.yaml:2:11: commands: must be a mapping"},
		{"version: 1\nfiles:\n  read: {deny: .env}\n", "x.yaml:3:16: files.read.deny: must be a list"},
		{"version: 1\ncommands:\n  allow: [ls, ...]\n", "x.yaml:3:15: commands.allow: ... adds to the built-in default's list only as the first element"},
		{"version: 1\nextends: none\ncommands:\n  allow: [..., ls]\n", "x.yaml:4:11: commands.allow: ... adds to the built-in default's list, but this file says extends: none"},
		{"version: 1\nnetwork:\n  allow: [..., pypi.org]\n", "x.yaml:3:11: network.allow: ... adds to the built-in default's list, but the default has no network.allow"},
		{"version: 1\nsandbox:\n  limits: [1]\n", "x.yaml:3:11: sandbox.limits: must be a mapping"},
		{"version: 1\nextends: nothing\n", "x.yaml:2:10: extends: \"nothing\": write extends: none"},
		{"sandbox: {network: proxy}\n", "x.yaml:1:1: version: missing"},
	} {
		_, err := Parse("x.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
	// A quoted "..." is the string itself.
	if _, err := Parse("x.yaml", []byte("version: 1\nfiles:\n  read: {deny: [\"...\"]}\n")); err != nil {
		t.Errorf("quoted ...: %v", err)
	}
}
