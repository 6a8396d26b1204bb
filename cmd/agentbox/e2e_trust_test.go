package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// A looser ./agentbox.yaml is refused without a terminal unless named with
// --policy, trusted once on a terminal (then remembered), and trusted again
// only after it changes; one no looser than the default is used silently.
func TestPolicyTrust(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	env := baseEnv(t)
	ab := abCmd{dir: dir, fullEnv: env}
	def := ab.run(t, "policy", "show-default")
	if def.code != 0 || !strings.Contains(def.stdout, "version: 1") {
		t.Fatalf("show-default: %d %q", def.code, def.stdout)
	}
	local := filepath.Join(dir, "agentbox.yaml")
	writeFile(t, local, def.stdout, 0o644)
	if r := ab.run(t, "exec", "--", "true"); r.code != 0 {
		t.Fatalf("the default's copy needs no trust: %d %q", r.code, r.stderr)
	}
	loose := strings.Replace(def.stdout, "\n  default: ask", "\n  default: allow", 1)
	if loose == def.stdout {
		t.Fatal("cannot loosen the default policy for the test")
	}
	writeFile(t, local, loose, 0o644)
	r := ab.run(t, "exec", "--", "touch ran")
	if r.code != 2 || !strings.Contains(r.stderr, "looser than the built-in default") || !strings.Contains(r.stderr, "--policy") {
		t.Fatalf("untrusted looser policy: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("something ran under an untrusted policy")
	}
	if r := ab.run(t, "exec", "--policy", local, "--", "true"); r.code != 0 {
		t.Fatalf("--policy names it: %d %q", r.code, r.stderr)
	}

	// Trust it on a terminal.
	var envArgs []string
	envArgs = append(envArgs, env...)
	line := "cd " + shellJoin([]string{dir}) + " && env -i " + shellJoin(envArgs) + " " +
		shellJoin([]string{testutil.Binary(t), "exec", "--", "true"}) + "; echo EXIT=$?; sleep 600"
	sock := "abtrust" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		b, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, b)
		}
		return string(b)
	}
	tmux("new-session", "-d", "-x", "120", "-y", "30", line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	waitPane := func(want string) string {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			p := tmux("capture-pane", "-p", "-J")
			if strings.Contains(p, want) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q not seen; pane:\n%s", want, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitPane("[y/N]")
	tmux("send-keys", "y", "Enter")
	if p := waitPane("EXIT="); !strings.Contains(p, "EXIT=0") || !strings.Contains(p, "trusted ") {
		t.Fatalf("trusting on a terminal:\n%s", p)
	}
	if r := ab.run(t, "exec", "--", "true"); r.code != 0 {
		t.Fatalf("trusted policy refused: %d %q", r.code, r.stderr)
	}
	// Changed: trusted no more.
	writeFile(t, local, loose+"\n# changed\n", 0o644)
	if r := ab.run(t, "exec", "--", "true"); r.code != 2 {
		t.Fatalf("a changed policy must be trusted again: %d %q", r.code, r.stderr)
	}
}

// A ./agentbox.yaml whose secrets come from a command or a file on the
// host names them in the trust refusal as what would run and be read on
// this host; the command did not run.
func TestTrustNamesHostSources(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran-on-host")
	tokenFile := filepath.Join(dir, "token.txt")
	writeFile(t, tokenFile, "file-value-12345\n", 0o600)
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), `version: 1
extends: none
sandbox: {network: proxy}
network: {allow: [example.com]}
secrets:
  GH: {from: "command:touch `+marker+`", hosts: [example.com]}
  NPM: {from: "file:`+tokenFile+`", hosts: [example.com]}
`, 0o644)
	r := abCmd{dir: dir, fullEnv: baseEnv(t)}.run(t, "exec", "--", "true")
	for _, want := range []string{
		"On this host, when a session starts, it would:",
		"run the command touch " + marker + " as you (secrets.GH.from: command:)",
		"read the file " + tokenFile + " (secrets.NPM.from: file:)",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say %q: %d\n%s", want, r.code, r.stderr)
		}
	}
	if r.code != 2 {
		t.Errorf("exit %d, want 2", r.code)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the secret's command ran on the host before the policy was trusted")
	}
}
