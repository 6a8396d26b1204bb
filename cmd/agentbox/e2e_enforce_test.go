package main_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/internal/testutil"
)

// The headline effect tests of issue 10 through the real binary: each
// class runs for real via `agentbox exec` and via `agentbox run` (the
// real OpenAI client against a scripted endpoint), under the built-in
// default policy, a policy that denies every command, and one that denies
// every command but lets run-time words past the up-front check (so that
// the exec-time and effects layers alone must stop it). Whichever layer
// catches it, the effect is absent, every denied exec is in the audit log,
// and the log verifies.

// enforceFiles are the file rules of the deny-everything policies: those
// of the built-in default that matter here.
const enforceFiles = `files:
  read:
    allow: ["**", "/tmp/**"]
    deny: ["**/.env", "**/.env.*"]
  write:
    allow: ["**", "/tmp/**"]
    deny: [".git/hooks/**", ".git/config", ".git/commondir", ".git", "*/**/.git", "*/**/.git/**", "**/.envrc", "**/.env"]
`

var enforcePolicies = []struct {
	name, yaml string
	dynamic    bool // run-time command words pass the up-front check
}{
	{name: "default"},
	{name: "deny-all", yaml: "version: 1\nextends: none\ncommands:\n  default: deny\n" + enforceFiles},
	{name: "deny-all-but-dynamic", yaml: "version: 1\nextends: none\ncommands:\n  default: deny\n  dynamic: allow\n" + enforceFiles, dynamic: true},
}

// attackWS is a workspace with a victim file, a secret, and a git
// repository whose host `git status` would run what .git/config says.
type attackWS struct {
	dir, marker, secret, gitConfig string
}

func newAttackWS(t *testing.T) *attackWS {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed on the host: %v", err)
	}
	w := &attackWS{dir: filepath.Join(t.TempDir(), "ws"), marker: filepath.Join(t.TempDir(), "host-marker"), secret: "s3cr3t-" + randomHex(t, 12)}
	writeFile(t, filepath.Join(w.dir, "victim"), "x", 0o644)
	writeFile(t, filepath.Join(w.dir, ".env"), "TOKEN="+w.secret+"\n", 0o644)
	writeFile(t, filepath.Join(w.dir, "evil", "config"), "[core]\n\tfsmonitor = touch "+w.marker+"\n", 0o644)
	w.git(t, "init", "-q")
	w.git(t, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
	b, err := os.ReadFile(filepath.Join(w.dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	w.gitConfig = string(b)
	return w
}

func (w *attackWS) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", w.dir}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// attacks are the classes of issue 10, each as the model would send it
// and, for the dynamic policy, with its command word known only at run
// time. script variants hide the command in a file bash runs (the default
// policy allows bash scripts; the up-front check cannot see inside).
func attacks(w *attackWS) []string {
	gitOut := `git log -1 --format='[core]%n%x09fsmonitor = touch ` + w.marker + `' --output=.git/config`
	return []string{
		`a['$(rm -f victim)']=1`,
		`a=( ['$(rm -f victim)']=1 )`,
		gitOut,
		`g=git; $g log -1 --format='[core]%n%x09fsmonitor = touch ` + w.marker + `' --output=.git/config`,
		"cat > x.sh <<'EOF'\n" + gitOut + "\nEOF\nbash x.sh",
		`f=.git/commondir; echo ` + filepath.Join(w.dir, "evil") + ` > $f`,
		`cp /bin/bash tool; chmod 4755 tool; chmod g+s tool`,
		`c=cp; $c /bin/bash tool2; m=chmod; $m 4755 tool2`,
		`cat /proc/self/cwd/.env`,
		`c=cat; $c /proc/self/cwd/.env`,
		"cat > y.sh <<'EOF'\ncat /proc/self/cwd/.env\nEOF\nbash y.sh",
	}
}

// checkEffectsAbsent asserts that no attack left its effect on the host.
// (rm itself is allowed by the default policy: there the victim is
// protected from code in subscripts, which runs unseen, not from rm.)
func (w *attackWS) checkEffectsAbsent(t *testing.T, leaks ...string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(w.dir, "victim")); err != nil {
		t.Errorf("the victim was removed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, ".git", "config")); string(b) != w.gitConfig {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(w.dir, ".git", "commondir")); err == nil {
		t.Error(".git/commondir was left in the workspace")
	}
	w.git(t, "status", "--short") // the user's next git command
	if _, err := os.Stat(w.marker); err == nil {
		t.Error("host git status ran the agent's command (marker created)")
	}
	_ = filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("set-id file on the host: %s %v", p, fi.Mode())
		}
		return nil
	})
	for i, s := range leaks {
		if strings.Contains(s, w.secret) {
			t.Errorf("the secret leaked (text %d): %q", i, clipTo(s, w.secret))
		}
	}
}

func clipTo(s, sub string) string {
	i := strings.Index(s, sub)
	lo, hi := max(0, i-200), min(len(s), i+len(sub)+50)
	return s[lo:hi]
}

// checkAudit asserts that every denied exec the results reported has its
// own record and that the log verifies.
func checkAudit(t *testing.T, log string, wantDenied bool) {
	t.Helper()
	denied := 0
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "exec_denied" {
			denied++
			if len(l.rec.Argv) == 0 || l.rec.PID <= 0 || l.rec.Rule == "" || l.rec.Decision == "" {
				t.Errorf("exec_denied record without argv, pid, rule or decision: %s", l.raw)
			}
		}
	}
	if wantDenied && denied == 0 {
		t.Error("no exec_denied record: the exec-time layer stopped nothing")
	}
	if v, _ := verifyLog(t, nil, log); v.code != 0 {
		t.Errorf("audit verify: %d %q %q", v.code, v.stdout, v.stderr)
	}
}

func policyArgs(t *testing.T, yaml string) []string {
	if yaml == "" {
		return nil // the built-in default
	}
	return []string{"--policy", writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), yaml, 0o644)}
}

func TestEnforceEffectsExec(t *testing.T) {
	testutil.RequireDocker(t)
	for _, pol := range enforcePolicies {
		t.Run(pol.name, func(t *testing.T) {
			w := newAttackWS(t)
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			var texts []string
			for _, cmd := range attacks(w) {
				args := append([]string{"exec", "--workspace", w.dir, "--audit", log}, policyArgs(t, pol.yaml)...)
				r := abCmd{dir: t.TempDir()}.run(t, append(args, "--", cmd)...)
				texts = append(texts, r.stdout, r.stderr)
			}
			data, _ := os.ReadFile(log)
			w.checkEffectsAbsent(t, append(texts, string(data))...)
			checkAudit(t, log, pol.dynamic || pol.name == "default")
		})
	}
}

func TestEnforceEffectsRun(t *testing.T) {
	testutil.RequireDocker(t)
	for _, pol := range enforcePolicies {
		t.Run(pol.name, func(t *testing.T) {
			w := newAttackWS(t)
			var replies []agenttest.Reply
			for _, cmd := range attacks(w) {
				replies = append(replies, agenttest.Tools(agenttest.Bash(cmd)))
			}
			srv := agenttest.New(t, append(replies, agenttest.Answer("done"))...)
			key := newKey(t)
			srv.Key = key
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"run", "--no-memory", "--workspace", w.dir, "--audit", log}, policyArgs(t, pol.yaml)...)
			r := abCmd{dir: t.TempDir(), env: modelEnv(srv, key)}.run(t, append(args, "try the attacks")...)
			if r.code != 0 {
				t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
			}
			texts := []string{r.stdout, r.stderr}
			var toolMsgs []string
			for _, rq := range srv.Requests() {
				texts = append(texts, string(rq.Body))
				if m := rq.Request.Messages; len(m) > 0 && m[len(m)-1].Role == "tool" {
					toolMsgs = append(toolMsgs, m[len(m)-1].Content)
				}
			}
			data, _ := os.ReadFile(log)
			w.checkEffectsAbsent(t, append(texts, string(data))...)
			checkAudit(t, log, pol.dynamic || pol.name == "default")
			// The model is told which program was stopped, by which rule.
			if pol.dynamic || pol.name == "default" {
				all := strings.Join(toolMsgs, "\n")
				if !strings.Contains(all, "denied at exec time: ") || !strings.Contains(all, ", rule ") {
					t.Errorf("no tool message names a denied exec and its rule:\n%s", all)
				}
			}
			// (No set-id alarm is expected: seccomp refuses the chmod
			// itself, and checkEffectsAbsent finds no set-id file.)
		})
	}
}
