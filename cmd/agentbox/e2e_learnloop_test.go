package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	root "github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestAuthoringLoop is issue 26's done-when on the three scripted example
// tasks of examples/authoring: a run of each task (an ordinary run under the
// default policy: run --learn is not built yet), then policy suggest; a
// replay of that run under the suggestion has no new denial, a held-out run
// of the same task at most 1 %; what the tasks never did (curl to an
// unlisted host, rm -rf ~, writes outside the workspace) is denied; the
// suggestion is proven within the default, a loosened policy is not, and
// diff names the loosened rule with an example.
func TestAuthoringLoop(t *testing.T) {
	testutil.RequireDocker(t)
	ex := filepath.Join(testutil.RepoRoot(), "examples", "authoring")
	dir := t.TempDir()
	in := abCmd{dir: dir}
	for _, task := range []string{"calc", "notes", "gen"} {
		t.Run(task, func(t *testing.T) {
			run := func(script, log string) {
				ws := filepath.Join(dir, filepath.Base(log)+".ws")
				if err := os.CopyFS(ws, os.DirFS(filepath.Join(ex, task))); err != nil {
					t.Fatal(err)
				}
				r := in.run(t, "run", "--workspace", ws, "--audit", log, "--script", filepath.Join(ex, script), "the "+task+" task")
				if r.code != 0 {
					t.Fatalf("run %s: %d %q", script, r.code, r.stderr)
				}
			}
			learn, held := filepath.Join(dir, task+".learn.jsonl"), filepath.Join(dir, task+".heldout.jsonl")
			run(task+".learn.yaml", learn)
			run(task+".heldout.yaml", held)
			sugg := filepath.Join(dir, task+".suggested.yaml")
			if r := in.run(t, "policy", "suggest", learn, "-o", sugg); r.code != 0 {
				t.Fatalf("suggest: %d %q", r.code, r.stderr)
			}
			text, err := os.ReadFile(sugg)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(text), "# "+learn+":") {
				t.Errorf("no rule names its audit lines:\n%s", text)
			}
			for _, log := range []string{learn, held} {
				denied, calls := newDenials(t, in, log, sugg)
				if log == learn && denied != 0 || denied*100 > calls {
					t.Errorf("replay of %s under the suggestion: %d new denials in %d calls", filepath.Base(log), denied, calls)
				}
			}
			for _, args := range [][]string{{"curl https://unlisted.example.com/x"}, {"rm -rf ~"}, {"--write", "/etc/passwd"},
				{"--write", "/tmp/x"}, {"echo x > /home/user/.bashrc"}, {"--connect", "unlisted.example.com:443"}} {
				r := in.run(t, append([]string{"policy", "explain", "--policy", sugg}, args...)...)
				if r.code != 0 || !strings.HasPrefix(r.stdout, "deny") {
					t.Errorf("explain %q under the suggestion: %d %q", args, r.code, r.stdout)
				}
			}
			if r := in.run(t, "policy", "check", sugg, "--within", "default"); r.code != 0 {
				t.Errorf("the suggestion is not within the default: %d %q", r.code, r.stdout)
			}
		})
	}
	loose := filepath.Join(dir, "loose.yaml")
	writeFile(t, loose, strings.Replace(string(root.DefaultPolicy), "    - match: \"rm -rf ~\"\n      why: never wipe the home directory\n", "", 1), 0o644)
	if r := in.run(t, "policy", "check", loose, "--within", "default"); r.code != 1 || !strings.Contains(r.stdout, "rm -rf '~'") {
		t.Errorf("a loosened policy passes --within: %d %q", r.code, r.stdout)
	}
	if r := in.run(t, "policy", "diff", "default", loose); r.code != 1 || !strings.Contains(r.stdout, `"rm -rf ~" (deny) is not kept`) || !strings.Contains(r.stdout, "e.g. command `rm -rf '~'`") {
		t.Errorf("diff does not name the loosened rule with an example: %d %q", r.code, r.stdout)
	}
}

// newDenials replays log under policy and counts the calls newly denied,
// and the calls recorded.
func newDenials(t *testing.T, in abCmd, log, policy string) (denied, calls int) {
	t.Helper()
	r := in.run(t, "audit", "replay", "--json", log, "--policy", policy)
	var ch []struct{ Old, New string }
	if err := json.Unmarshal([]byte(r.stdout), &ch); err != nil {
		t.Fatalf("replay --json: %d %v %q", r.code, err, r.stdout)
	}
	for _, c := range ch {
		if c.New == "deny" && c.Old != "deny" {
			denied++
		}
	}
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "tool_call" && l.rec.Phase == "decision" {
			calls++
		}
	}
	if calls == 0 {
		t.Fatalf("%s records no call", log)
	}
	return denied, calls
}
