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

// TestLiveLineHoldsForTheQuestion: on a real terminal (tmux), while an
// approval question waits for its answer the live line is not redrawn
// over it: the question stays on screen for as long as it waits (watched
// across many redraw periods), and the answer typed there is taken. On
// the code before, the live line erased the question's last line every
// 200 ms.
func TestLiveLineHoldsForTheQuestion(t *testing.T) {
	testutil.RequireDocker(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for the terminal test: %v", err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\ncommands:\n  default: deny\n  allow: [echo]\n  ask: [touch]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: \"touch asked.txt\"}}\n  - content: finished\n"
	sp := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sp, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, e := range baseEnv(t) {
		if !strings.HasPrefix(e, "NO_COLOR=") {
			env = append(env, e)
		}
	}
	env = append(env, "TERM=xterm-256color")
	line := "env -i " + shellJoin(env) + " " + shellJoin([]string{testutil.Binary(t), "run", "--no-memory", "--workspace", ws, "--policy", pol,
		"--audit", filepath.Join(dir, "a.jsonl"), "--script", sp, "ask me"}) + " > /dev/null; echo EXIT=$?; sleep 600"
	sock := "abtestq" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		b, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, b)
		}
		return string(b)
	}
	tmux("new-session", "-d", "-x", "120", "-y", "40", line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	pane := func() string { return tmux("capture-pane", "-p", "-J") }
	const question = "Allow? [y]es"
	testutil.Eventually(t, 2*time.Minute, "the approval question", func() bool { return strings.Contains(pane(), question) })
	// Watch the question across 10 redraw periods of the live line.
	until := time.Now().Add(2 * time.Second)
	for time.Now().Before(until) {
		p := pane()
		if !strings.Contains(p, question) || strings.Contains(p, "execute_bash running") {
			t.Fatalf("the question was overwritten while it waited:\n%s", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tmux("send-keys", "y")
	testutil.Eventually(t, 2*time.Minute, "the end of the run", func() bool { return strings.Contains(pane(), "EXIT=") })
	if p := pane(); !strings.Contains(p, "EXIT=0") {
		t.Errorf("the run after answering y:\n%s", p)
	}
	if _, err := os.Stat(filepath.Join(ws, "asked.txt")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
}
