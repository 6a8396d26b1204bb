package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestAlwaysSticks: on a real terminal, "always" for `tools/pip install
// alpha` (rule commands.ask "pip install") saves `pip install`, and the
// next run, with nobody to ask, runs `tools/pip install beta` without
// asking: the saved approval matches as the rule does (basename, word
// prefix). The prefix offered for a command no rule names is the program
// and its subcommand (`git commit`), never its options and message.
func TestAlwaysSticks(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "tools", "pip"), "#!/bin/sh\necho pip-ran \"$@\"\n", 0o755)
	pol := writeFile(t, filepath.Join(dir, "p.yaml"), "version: 1\nextends: none\ncommands:\n  default: ask\n  allow: [echo, sh, dash]\n  ask: [pip install]\n", 0o644)
	env := baseEnv(t)
	s1 := writeFile(t, filepath.Join(dir, "s1.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "tools/pip install alpha"}}
  - tool_calls:
      - {name: execute_bash, args: {command: "git -c user.email=x@example.com commit -m 'fix the parser at last'"}}
  - content: done
`, 0o644)
	const question = "Allow? [y]es once"
	p := newTmuxPane(t, 200, dir, env, "run", "--no-memory", "--workspace", ws, "--policy", pol,
		"--audit", filepath.Join(dir, "a1.jsonl"), "--script", s1, "install")
	pane := p.wait(question)
	if !strings.Contains(pane, "[a] saves: command prefix `pip install`") {
		t.Errorf("the prompt does not offer `pip install`:\n%s", pane)
	}
	p.tmux("send-keys", "a")
	testutil.Eventually(t, 2*time.Minute, "the second question", func() bool {
		return strings.Count(p.tmux("capture-pane", "-p", "-J", "-S", "-200"), question) == 2
	})
	pane = p.tmux("capture-pane", "-p", "-J", "-S", "-200")
	second := pane[strings.Index(pane, "pip-ran install alpha")+1:]
	if !strings.Contains(second, "command prefix `git commit`") || strings.Contains(second, "prefix `git -c") || strings.Contains(second, "parser at last`") {
		t.Errorf("the prefix offered for git -c ... commit -m ... is not `git commit`:\n%s", second)
	}
	p.tmux("send-keys", "n")
	if pane := p.wait("EXIT="); !strings.Contains(pane, "EXIT=0") || !strings.Contains(pane, "pip-ran install alpha") {
		t.Fatalf("first run:\n%s", pane)
	}

	s2 := writeFile(t, filepath.Join(dir, "s2.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "tools/pip install beta --upgrade"}}
  - content: done
`, 0o644)
	r := abCmd{dir: dir, fullEnv: env}.run(t, "run", "--no-memory", "--workspace", ws, "--policy", pol,
		"--audit", filepath.Join(dir, "a2.jsonl"), "--script", s2, "install again")
	if r.code != 0 || !strings.Contains(r.stderr, "pip-ran install beta --upgrade") || strings.Contains(r.stderr, "denied") {
		t.Errorf("the saved `pip install` did not allow tools/pip install beta with no terminal: %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a2.jsonl")); err != nil || !strings.Contains(string(b), `"approver":"remembered"`) {
		t.Errorf("the second run's approval is not recorded as remembered: %v", err)
	}
}
