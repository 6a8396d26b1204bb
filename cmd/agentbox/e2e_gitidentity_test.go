package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// hostGitEnv runs the host's git in dir with env (a test HOME: no user
// configuration of the machine's).
func hostGitEnv(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitWorkspace is a repository with one commit and a new file; the host
// user is named in the user's configuration (HOME of env), which the
// sandbox does not see.
func gitWorkspace(t *testing.T, env []string) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	hostGitEnv(t, env, ws, "init", "-q", "-b", "main")
	hostGitEnv(t, env, ws, "config", "--global", "user.name", "Ada Lovelace")
	hostGitEnv(t, env, ws, "config", "--global", "user.email", "ada@example.com")
	writeFile(t, filepath.Join(ws, "README"), "first\n", 0o644)
	hostGitEnv(t, env, ws, "add", "README")
	hostGitEnv(t, env, ws, "commit", "-q", "-m", "first")
	writeFile(t, filepath.Join(ws, "hello.txt"), "hello\n", 0o644)
	return ws
}

const commitScript = `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "git add hello.txt && git commit -m 'add hello'"}}
  - content: committed
`

// TestCommitUnderHostIdentity: under the built-in default policy, with
// nobody to ask, the agent's git add + git commit runs, the commit lands
// in the host repository under the host user's identity (the workspace's
// git config, as host git resolves it), the header says who commits, and
// git's automatic maintenance is not killed. A policy's fixed identity is
// used instead; "none" leaves git without one; a malformed value is
// refused at load with its field.
func TestCommitUnderHostIdentity(t *testing.T) {
	testutil.RequireDocker(t)
	env := baseEnv(t)
	script := writeFile(t, filepath.Join(t.TempDir(), "s.yaml"), commitScript, 0o644)
	commit := func(t *testing.T, ws string, extra ...string) result {
		t.Helper()
		args := append([]string{"run", "--no-memory", "--approve", "deny", "--workspace", ws,
			"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script}, extra...)
		return abCmd{fullEnv: env}.run(t, append(args, "commit hello.txt")...)
	}

	t.Run("host", func(t *testing.T) {
		ws := gitWorkspace(t, env)
		r := commit(t, ws)
		if r.code != 0 || !strings.Contains(r.stderr, "git commits as Ada Lovelace <ada@example.com> (host git config)") {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		_, after, _ := strings.Cut(r.stderr, "git commits as")
		for _, bad := range []string{"maintenance died", "Author identity unknown", "denied", "held", "alarm"} {
			if strings.Contains(after, bad) {
				t.Errorf("output has %q:\n%s", bad, r.stderr)
			}
		}
		got := hostGitEnv(t, env, ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s")
		if got != "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>|add hello" {
			t.Errorf("host git log: %q\n%s", got, r.stderr)
		}
		if st := hostGitEnv(t, env, ws, "status", "--porcelain"); st != "" {
			t.Errorf("the host repository is not clean after the commit: %q", st)
		}
		if n := hostGitEnv(t, env, ws, "rev-list", "--count", "HEAD"); n != "2" {
			t.Errorf("commits on the host: %s", n)
		}
	})

	t.Run("fixed", func(t *testing.T) {
		ws := gitWorkspace(t, env)
		pol := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), "version: 1\nextends: none\nsandbox:\n  git_identity: \"Build Bot <bot@example.org>\"\ncommands:\n  allow: [git add, git commit]\n", 0o644)
		r := commit(t, ws, "--policy", pol)
		if r.code != 0 || !strings.Contains(r.stderr, "git commits as Build Bot <bot@example.org> (sandbox.git_identity)") {
			t.Fatalf("run: %d\n%s", r.code, r.stderr)
		}
		if got := hostGitEnv(t, env, ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); got != "Build Bot <bot@example.org>|Build Bot <bot@example.org>" {
			t.Errorf("host git log: %q\n%s", got, r.stderr)
		}
	})

	t.Run("none", func(t *testing.T) {
		ws := gitWorkspace(t, env)
		pol := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), "version: 1\nextends: none\nsandbox:\n  git_identity: none\ncommands:\n  allow: [git add, git commit]\n", 0o644)
		r := commit(t, ws, "--policy", pol)
		if !strings.Contains(r.stderr, "git commits as none (sandbox.git_identity: none)") {
			t.Errorf("header: %s", r.stderr)
		}
		if n := hostGitEnv(t, env, ws, "rev-list", "--count", "HEAD"); n != "1" {
			t.Errorf("git_identity none committed anyway (HOME has no identity): %s commits\n%s", n, r.stderr)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		for _, v := range []string{`"Ada"`, `"<ada@example.com>"`, `"Ada <ada example.com>"`, `"Ada <a@b> x"`, `hosts`, `""`} {
			pol := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), "version: 1\nsandbox:\n  git_identity: "+v+"\n", 0o644)
			r := abCmd{fullEnv: env}.run(t, "policy", "check", pol)
			if r.code != 2 || !strings.Contains(r.stderr+r.stdout, "sandbox.git_identity") {
				t.Errorf("git_identity %s: %d %q %q", v, r.code, r.stdout, r.stderr)
			}
		}
	})
}
