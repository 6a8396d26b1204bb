package policy

import (
	"testing"
	"time"

	agentbox "github.com/agentbox/agentbox"
)

func TestDefaultPolicyLoads(t *testing.T) {
	if _, err := Parse("policy.example.yaml", agentbox.DefaultPolicy); err != nil {
		t.Fatalf("policy.example.yaml is invalid:\n%v", err)
	}
	p := Default()
	if p.Path != "" || len(p.SHA256) != 64 {
		t.Errorf("Path %q SHA256 %q", p.Path, p.SHA256)
	}
	s := p.Sandbox
	if s.Image != "agentbox/base:latest" || s.Workspace != "rw" || s.Network != "none" || s.CPUs != 1 ||
		s.MemoryBytes != 1<<30 || s.Pids != 256 || s.CallTimeout != 2*time.Minute || s.CallTimeoutMax != 10*time.Minute || s.GitIdentity != "host" || s.SessionTimeout != time.Hour ||
		s.OutputMaxBytes != 16<<10 || len(s.Env) != 2 || s.Background != "kill" {
		t.Errorf("sandbox settings: %+v", s)
	}
	if p.Audit.PreviewBytes != 4<<10 || len(p.Audit.Redact) != 1 {
		t.Errorf("audit settings: %+v", p.Audit)
	}
	for cmd, want := range map[string]Verdict{
		"ls -la":                         Allow,
		"git status":                     Allow,
		"python3 -m pytest":              Allow,
		"git push":                       Ask,
		"pip install requests":           Ask,
		"sudo ls":                        Deny,
		"rm -rf /":                       Deny,
		"rm -rf build":                   Allow, // real work: the file rules are the boundary
		"echo x > .git/config":           Deny,
		"cat .env":                       Deny, // an argument naming a read-denied file
		"cat < .env":                     Deny,
		"for i in 1 2; do echo $i; done": Allow,
	} {
		if got := p.Decide(Action{Kind: Command, Command: cmd}); got.Verdict != want {
			t.Errorf("%s: got %s (%s), want %s", cmd, got.Verdict, got.Reason, want)
		}
	}
	for path, want := range map[string]Verdict{"src/a.go": Allow, ".env": Deny, "sub/.env": Deny, "keys/x.pem": Deny, "/etc/passwd": Deny} {
		if got := p.Decide(Action{Kind: Read, Path: path}); got.Verdict != want {
			t.Errorf("read %s: got %s (%s), want %s", path, got.Verdict, got.Reason, want)
		}
	}
	for path, want := range map[string]Verdict{"out.txt": Allow, ".git/hooks/pre-commit": Deny, ".git/config": Deny, "a/.envrc": Deny} {
		if got := p.Decide(Action{Kind: Write, Path: path}); got.Verdict != want {
			t.Errorf("write %s: got %s (%s), want %s", path, got.Verdict, got.Reason, want)
		}
	}
}

func TestMissingFieldsTakeDefaults(t *testing.T) {
	p, err := Parse("min.yaml", []byte("version: 1\nextends: none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandbox.Image != "agentbox/base:latest" || p.Audit.PreviewBytes != 4096 || p.Sandbox.Env[0] != "LANG" {
		t.Errorf("%+v %+v", p.Sandbox, p.Audit)
	}
	if d := p.Decide(Action{Kind: Command, Command: "frobnicate"}); d.Verdict != Ask || d.Rule != "commands.default" {
		t.Errorf("default: %+v", d)
	}
	if d := p.Decide(Action{Kind: Command, Command: "$X"}); d.Verdict != Deny || d.Rule != "commands.dynamic" {
		t.Errorf("dynamic: %+v", d)
	}
	if d := p.Decide(Action{Kind: Read, Path: "x"}); d.Verdict != Allow {
		t.Errorf("read: %+v", d)
	}
	allow, deny := p.FileRules(true)
	if len(allow) != 1 || allow[0] != "**" || len(deny) != 0 {
		t.Errorf("FileRules: %v %v", allow, deny)
	}
}
