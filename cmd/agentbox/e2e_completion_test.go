package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// bash completion completes commands and flags (also after "--" typed as
// the current word, which must never run anything); zsh and fish scripts
// and the man page are generated; make install puts them all in place.
func TestCompletionManInstall(t *testing.T) {
	bin := testutil.Binary(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "agentbox")); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		script := `source <(agentbox completion bash); COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _agentbox; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", append([]string{"-c", script, "bash"}, words...)...)
		cmd.Env = append(baseEnv(t), "PATH="+binDir+":"+os.Getenv("PATH"), "OPENAI_API_KEY=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion %v: %v %s", words, err, out)
		}
		return string(out)
	}
	if got := complete("agentbox", "ru"); got != "run\n" {
		t.Errorf("agentbox ru<TAB>: %q", got)
	}
	if got := complete("agentbox", "run", "--js"); !strings.Contains(got, "--json\n") || !strings.Contains(got, "--json-events\n") {
		t.Errorf("agentbox run --js<TAB>: %q", got)
	}
	if got := complete("agentbox", "run", "--"); !strings.Contains(got, "--max-steps\n") || strings.Contains(got, "API key") {
		t.Errorf("agentbox run --<TAB>: %q", got)
	}
	for _, sh := range []string{"zsh", "fish"} {
		if r := agentbox(t, nil, "completion", sh); r.code != 0 || !strings.Contains(r.stdout, "agentbox") {
			t.Errorf("completion %s: %d %q", sh, r.code, r.stderr)
		}
	}
	if r := agentbox(t, nil, "completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: %d", r.code)
	}
	if r := agentbox(t, nil, "man"); r.code != 0 || !strings.Contains(r.stdout, ".TH agentbox 1") || !strings.Contains(r.stdout, "json-events") {
		t.Errorf("man: %d %.200q", r.code, r.stdout)
	}

	dest := t.TempDir()
	cmd := exec.Command("make", "-o", "build", "install", "BIN="+bin, "DESTDIR="+dest, "PREFIX=/usr")
	cmd.Dir = testutil.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v %s", err, out)
	}
	for _, f := range []string{"bin/agentbox", "share/bash-completion/completions/agentbox", "share/zsh/site-functions/_agentbox",
		"share/fish/vendor_completions.d/agentbox.fish", "share/man/man1/agentbox.1"} {
		if fi, err := os.Stat(filepath.Join(dest, "usr", f)); err != nil || fi.Size() == 0 {
			t.Errorf("make install: %s: %v", f, err)
		}
	}
}
