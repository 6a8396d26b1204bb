package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/testutil"
)

// On a real terminal (tmux), a running command shows a live elapsed-time
// line that fits the width, is redrawn in place and is erased when the
// call ends.
func TestLiveLineOnTerminal(t *testing.T) {
	testutil.RequireDocker(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for the terminal test: %v", err)
	}
	for _, width := range []int{60, 160} {
		t.Run(strconv.Itoa(width), func(t *testing.T) { liveLine(t, width, "xterm-256color") })
	}
	t.Run("TERM-dumb", func(t *testing.T) { liveLine(t, 100, "dumb") })
}

func liveLine(t *testing.T, width int, termName string) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(ws, "gate")
	// The command waits until the test has seen the live line.
	cmd := "touch started; while [ ! -e gate ]; do sleep 0.1; done; echo released with a long tail of words that makes this line wider than sixty columns"
	script := "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: " + strconv.Quote(cmd) + "}}\n  - content: finished\n"
	sp := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sp, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "answer.txt")
	var env []string
	for _, e := range baseEnv(t) {
		if !strings.HasPrefix(e, "NO_COLOR=") {
			env = append(env, e)
		}
	}
	env = append(env, "TERM="+termName)
	line := "env -i " + shellJoin(env) + " " + shellJoin([]string{testutil.Binary(t), "run", "--no-memory", "--approve", "allow", "--workspace", ws,
		"--audit", filepath.Join(dir, "a.jsonl"), "--script", sp, "wait for the gate"}) + " > " + shellJoin([]string{out}) + "; echo EXIT=$?; sleep 600"
	sock := "abtest" + strconv.Itoa(os.Getpid()) + "w" + strconv.Itoa(width)
	tmux := func(args ...string) string {
		b, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, b)
		}
		return string(b)
	}
	tmux("new-session", "-d", "-x", strconv.Itoa(width), "-y", "30", line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	pane := func() string { return tmux("capture-pane", "-p", "-J") }
	waitFor := func(what string, ok func(string) bool) string {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			p := pane()
			if ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen; pane:\n%s", what, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if termName == "dumb" {
		// The live line is drawn before the command starts: once it has
		// started, a live line would be on the screen.
		waitFor("the command to start", func(string) bool { return inSandbox(env, ws, "started") })
		if p := pane(); strings.Contains(p, "execute_bash running") {
			t.Errorf("TERM=dumb shows a live line:\n%s", p)
		}
	} else {
		waitFor("live line", func(p string) bool { return strings.Contains(p, "execute_bash running") })
	}
	for _, l := range strings.Split(tmux("capture-pane", "-p"), "\n") {
		if strings.Contains(l, "execute_bash running") {
			if n := utf8.RuneCountInString(l); n >= width || !strings.Contains(l, " s  [1]") {
				t.Errorf("live line %q (%d columns) does not fit %d or lacks the elapsed time", l, n, width)
			}
		}
	}
	openGate(t, pane(), gate)
	p := waitFor("end", func(p string) bool { return strings.Contains(p, "EXIT=") })
	if !strings.Contains(p, "EXIT=0") || strings.Contains(p, "execute_bash running") || !strings.Contains(p, "[1/30] execute_bash") {
		t.Errorf("after the call the live line must be gone:\n%s", p)
	}
	if b, _ := os.ReadFile(out); string(b) != "finished\n" {
		t.Errorf("answer on stdout: %q", b)
	}
}

// openGate makes the gate file the command waits for visible in the
// sandbox: written in the running container (docker exec), since a file
// the host adds to a staged workspace's lower layer after the sandbox
// looked it up may stay invisible through the overlay; and on the host
// for a workspace that is not staged.
func openGate(t *testing.T, pane, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`session ([0-9a-f]{32})`).FindStringSubmatch(pane)
	if m == nil {
		t.Fatalf("no session id on the pane:\n%s", pane)
	}
	ids, err := exec.Command("docker", "ps", "-q", "--filter", "label=agentbox.session="+m[1]).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	for _, id := range strings.Fields(string(ids)) {
		if out, err := exec.Command("docker", "exec", id, "touch", "/workspace/"+filepath.Base(gate)).CombinedOutput(); err != nil {
			t.Logf("docker exec touch in %s: %v %s", id, err, out)
		}
	}
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
