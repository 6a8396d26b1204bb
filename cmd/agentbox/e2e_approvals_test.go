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

// tmuxPane runs one agentbox command on a real terminal.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func newTmuxPane(t *testing.T, width int, dir string, env []string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for the terminal test: %v", err)
	}
	line := "cd " + shellJoin([]string{dir}) + " && env -i " + shellJoin(env) + " " +
		shellJoin(append([]string{testutil.Binary(t)}, args...)) + "; echo EXIT=$?; sleep 600"
	p := &tmuxPane{t: t, sock: "abtmux" + strconv.Itoa(os.Getpid()) + strconv.FormatInt(time.Now().UnixNano(), 36)}
	p.tmux("new-session", "-d", "-x", strconv.Itoa(width), "-y", "40", line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.sock, "kill-server").Run() })
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	b, err := exec.Command("tmux", append([]string{"-L", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v %s", args, err, b)
	}
	return string(b)
}

// wait polls the pane until it shows want (deadline 2 minutes).
func (p *tmuxPane) wait(want string) string {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := p.tmux("capture-pane", "-p", "-J")
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%q not seen; pane:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promptLines counts the lines of the last approval prompt on a pane,
// from "the policy asks before" to its answer line (0: none).
func promptLines(pane string) int {
	lines := strings.Split(pane, "\n")
	first := -1
	for i, l := range lines {
		if strings.Contains(l, "the policy asks before") {
			first = i
		}
		if first >= 0 && strings.Contains(l, "Allow? [y]es") {
			return i - first + 1
		}
	}
	return 0
}

// "always" is one key, saved for the workspace (the prompt shows the
// prefix and the file first), listable with when it was saved, removable;
// "r" denies and sends the reason to the model (recorded in the audit).
func TestApprovalsRemember(t *testing.T) {
	testutil.RequireDocker(t)
	dir, ws := t.TempDir(), t.TempDir()
	env := baseEnv(t)
	ab := abCmd{dir: dir, fullEnv: env}
	cmd := "frobnicate-xyz run" // saved as the program and its subcommand
	p := newTmuxPane(t, 160, dir, env, "exec", "--workspace", ws, "--", cmd+" --flag")
	pane := p.wait("[a]lways in this workspace")
	if !strings.Contains(pane, "[a] saves: command prefix `frobnicate-xyz run` in ") || !strings.Contains(pane, "approvals.json for workspace") {
		t.Fatalf("the prompt does not show the rule and where it is saved:\n%s", pane)
	}
	if n := promptLines(pane); n < 1 || n > 4 {
		t.Errorf("the prompt block takes %d lines, want at most 4 (the command; rule and why; what each choice saves; the answer line):\n%s", n, pane)
	}
	p.tmux("send-keys", "a") // one key, no Enter
	if s := p.wait("EXIT="); !strings.Contains(s, "EXIT=127") {
		t.Fatalf("approved once with a single key, the command runs (127: not found):\n%s", s)
	}
	r := ab.run(t, "approvals", "list", "--workspace", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "command prefix `"+cmd+"`") || !strings.Contains(r.stdout, time.Now().Format("2006-01-02")) {
		t.Fatalf("approvals list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Remembered: no terminal needed now, and longer commands with the prefix.
	if r := ab.run(t, "exec", "--workspace", ws, "--", cmd+" more"); r.code != 127 {
		t.Errorf("remembered command: %d %q", r.code, r.stderr)
	}
	// --approve deny denies every ask, saved prefixes included.
	if r := ab.run(t, "exec", "--approve", "deny", "--workspace", ws, "--", cmd+" more"); r.code != 126 || !strings.Contains(r.stderr, "--approve deny") {
		t.Errorf("--approve deny with the prefix saved: %d %q", r.code, r.stderr)
	}
	if r := ab.run(t, "exec", "--workspace", ws, "--", "frobnicate-xyz other"); r.code != 126 {
		t.Errorf("another command of the same program must still ask: %d %q", r.code, r.stderr)
	}
	if r := ab.run(t, "approvals", "remove", "--workspace", ws, "not-there"); r.code == 0 {
		t.Errorf("removing an unknown prefix succeeded")
	}
	if r := ab.run(t, "approvals", "remove", "--workspace", ws, cmd); r.code != 0 {
		t.Fatalf("approvals remove: %d %q", r.code, r.stderr)
	}
	if r := ab.run(t, "exec", "--workspace", ws, "--", cmd); r.code != 126 {
		t.Errorf("after remove: %d %q", r.code, r.stderr)
	}

	// r: no, and the reason goes to the model (and the audit log).
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	p = newTmuxPane(t, 160, dir, env, "exec", "--workspace", ws, "--audit", log, "--", cmd)
	p.wait("[r] no, and tell the model why")
	p.tmux("send-keys", "r")
	p.wait("Why not?")
	p.tmux("send-keys", "use the make target instead", "Enter")
	if s := p.wait("EXIT="); !strings.Contains(s, "EXIT=126") {
		t.Fatalf("declined with a reason:\n%s", s)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "use the make target instead") {
		t.Errorf("the reason is not in the audit log:\n%s", b)
	}
}
