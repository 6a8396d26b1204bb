package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// Flags after positionals are flags; a typo names the closest flag and the
// command's help; --version, -v and version print commit, Go and platform.
func TestFlagsAnywhere(t *testing.T) {
	r := agentbox(t, nil, "policy", "explain", "ls", "--json")
	var j struct {
		Decision string `json:"decision"`
		Commands []struct {
			Argv []string `json:"argv"`
		} `json:"commands"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 0 || len(j.Commands) != 1 || len(j.Commands[0].Argv) != 1 {
		t.Fatalf("explain 'ls' --json: %d %v %q %q", r.code, err, r.stdout, r.stderr)
	}
	// After --, a flag is the command's again.
	r = agentbox(t, nil, "policy", "explain", "--json", "--", "ls --json")
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || len(j.Commands) != 1 || strings.Join(j.Commands[0].Argv, " ") != "ls --json" {
		t.Errorf("explain -- 'ls --json': %v %q", err, r.stdout)
	}
	r = agentbox(t, nil, "run", "task", "--jsn")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean --json?") || !strings.Contains(r.stderr, "agentbox run --help") {
		t.Errorf("typo: %d %q", r.code, r.stderr)
	}
	r = agentbox(t, nil, "policy", "explain", "ls", "--jsno")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean --json?") || !strings.Contains(r.stderr, "agentbox policy explain --help") {
		t.Errorf("typo in a subcommand: %d %q", r.code, r.stderr)
	}
	r = agentbox(t, nil, "exec", "ls", "--color")
	if r.code != 2 || !strings.Contains(r.stderr, "agentbox exec -- ls --color") {
		t.Errorf("exec flag hint: %d %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		r = agentbox(t, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "agentbox ") || !strings.Contains(r.stdout, "(commit ") || !strings.Contains(r.stdout, " go1.") || !strings.Contains(r.stdout, "linux/") {
			t.Errorf("%v: %d %q %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// daily runs a scripted session with the given script and extra flags.
func dailyRun(t *testing.T, script string, args ...string) (result, string) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join(testutil.RepoRoot(), "examples", "demo-workspace"))); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(sp, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// Flags after the task, on purpose.
	all := append([]string{"run", "count the Python files", "--no-memory", "--workspace", ws, "--audit", log, "--script", sp}, args...)
	return agentbox(t, nil, all...), log
}

const demoScript = `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "find . -name '*.py' | wc -l"}}
  - tool_calls:
      - {name: read_file, args: {path: no-such-file.txt}}
  - content: "There are 3 Python files."
`

// The answer alone on stdout; progress, the header and failures on stderr.
func TestRunStreams(t *testing.T) {
	testutil.RequireDocker(t)
	r, log := dailyRun(t, demoScript)
	if r.code != 0 || r.stdout != "There are 3 Python files.\n" {
		t.Fatalf("stdout must be the answer alone: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"session ", "policy built-in", "network none", "(rw)", "audit " + log, "[1/30] execute_bash", "exit 0", "[3/30] done"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The failed read prints as failed, with its reason.
	var readLine string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "read_file") {
			readLine = l
		}
	}
	if !strings.Contains(readLine, "failed") || !strings.Contains(r.stderr, "no-such-file.txt") || strings.Contains(readLine, "0 bytes") {
		t.Errorf("failed read_file printed as %q:\n%s", readLine, r.stderr)
	}

	r, _ = dailyRun(t, demoScript, "--quiet")
	if r.code != 0 || r.stdout != "There are 3 Python files.\n" || strings.Contains(r.stderr, "There are") {
		t.Errorf("--quiet prints the answer once, on stdout: %q %q", r.stdout, r.stderr)
	}

	r, _ = dailyRun(t, "turns:\n  - content: nothing to do\n", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("--json: %v %q %q", err, r.stdout, r.stderr)
	}
	if fc, ok := res["files_changed"].([]any); !ok || len(fc) != 0 {
		t.Errorf("files_changed must be [], is %#v", res["files_changed"])
	}
	if strings.Contains(r.stderr, "[1/30]") {
		t.Errorf("--json: progress on stderr: %q", r.stderr)
	}

	r, _ = dailyRun(t, demoScript, "--json-events")
	if r.code != 0 {
		t.Fatalf("--json-events: %d %q", r.code, r.stderr)
	}
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Event, Status, Decision, Tool, Error string
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", l, err)
		}
		kinds = append(kinds, e.Event)
		if e.Event == "tool_call" && e.Tool == "read_file" && (e.Status != "failed" || e.Error == "") {
			t.Errorf("failed read in events: %s", l)
		}
	}
	got := strings.Join(kinds, ",")
	if got != "step,tool_started,tool_call,step,tool_started,tool_call,step,model_text,end" {
		t.Errorf("events: %s", got)
	}
	if r := agentbox(t, nil, "run", "x", "--json", "--quiet"); r.code != 2 {
		t.Errorf("--json with --quiet: %d", r.code)
	}
}
