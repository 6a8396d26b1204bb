package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// sixScript makes the six kinds of change of issue 12: an edit, an append,
// a deletion, an addition and a mode change in bash, and a rewrite through
// write_file.
const sixScript = `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "sed -i s/edit/EDITED/ edit.txt && echo appended >> src/append.txt && rm src/gone.txt && echo new > src/new.txt && chmod 755 run.sh"}}
  - tool_calls:
      - {name: write_file, args: {path: rewrite.txt, content: "rewritten\n"}}
  - content: done
`

const sixWant = "edit.txt:modified rewrite.txt:modified run.sh:mode src/append.txt:modified src/gone.txt:deleted src/new.txt:added"

const allowAll = "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\n"

// sixWorkspace writes the workspace the script changes, with n more files.
func sixWorkspace(t *testing.T, n int) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	for p, body := range map[string]string{"edit.txt": "edit\n", "src/append.txt": "line\n", "src/gone.txt": "gone\n",
		"run.sh": "#!/bin/sh\necho hi\n", "rewrite.txt": "old\n"} {
		writeTestFile(t, filepath.Join(ws, p), body)
	}
	for i := range n {
		d := filepath.Join(ws, "gen", fmt.Sprintf("d%03d", i/500))
		if i%500 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func writeTestFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sixFiles(t *testing.T) (script, pol string) {
	t.Helper()
	dir := t.TempDir()
	script, pol = filepath.Join(dir, "six.yaml"), filepath.Join(dir, "policy.yaml")
	writeTestFile(t, script, sixScript)
	writeTestFile(t, pol, allowAll)
	return script, pol
}

func checkSixApplied(t *testing.T, ws string) {
	t.Helper()
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(ws, p)); return string(b) }
	if read("edit.txt") != "EDITED\n" || read("src/append.txt") != "line\nappended\n" || read("src/new.txt") != "new\n" || read("rewrite.txt") != "rewritten\n" {
		t.Errorf("contents not applied")
	}
	if _, err := os.Stat(filepath.Join(ws, "src", "gone.txt")); err == nil {
		t.Errorf("deletion not applied")
	}
	if fi, _ := os.Stat(filepath.Join(ws, "run.sh")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode not applied")
	}
}

func changeSummary(t *testing.T, stdout string) string {
	t.Helper()
	var res struct {
		Files []struct{ Path, Change string } `json:"files_changed"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output: %v %q", err, stdout)
	}
	var got []string
	for _, f := range res.Files {
		got = append(got, f.Path+":"+f.Change)
	}
	sort.Strings(got)
	return strings.Join(got, " ")
}

var sessionRe = regexp.MustCompile(`agentbox apply ([0-9a-f]{12,64})`)

// TestCopySixKinds60000: on a 60,000-file workspace, all six kinds of
// change are reported in rw mode and in copy mode, and applied from copy
// mode (overlay, and the real copy when overlay is off).
func TestCopySixKinds60000(t *testing.T) {
	testutil.RequireDocker(t)
	script, pol := sixFiles(t)
	t.Run("rw", func(t *testing.T) {
		ws := sixWorkspace(t, 60000)
		r := agentbox(t, nil, "run", "--no-memory", "--json", "--policy", pol, "--workspace", ws, "--script", script, "six changes")
		if r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
		if got := changeSummary(t, r.stdout); got != sixWant {
			t.Errorf("rw changes:\n %s\nwant\n %s", got, sixWant)
		}
	})
	for _, overlay := range []string{"on", "off"} {
		t.Run("copy-overlay-"+overlay, func(t *testing.T) {
			ws := sixWorkspace(t, 60000)
			r := agentbox(t, []string{"AGENTBOX_OVERLAY=" + overlay}, "run", "--no-memory", "--json", "--policy", pol, "--workspace", ws,
				"--workspace-mode", "copy", "--apply", "--script", script, "six changes")
			if r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
			if got := changeSummary(t, r.stdout); got != sixWant {
				t.Errorf("copy changes:\n %s\nwant\n %s", got, sixWant)
			}
			want := "copy-on-write overlay"
			if overlay == "off" {
				want = "overlay unavailable: turned off"
			}
			if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "applied 6 change(s)") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkSixApplied(t, ws)
		})
	}
}

// TestChangesApplyDiscardGC: the review-then-apply workflow from the CLI,
// a conflict that applies nothing, discard and gc.
func TestChangesApplyDiscardGC(t *testing.T) {
	testutil.RequireDocker(t)
	script, pol := sixFiles(t)
	env := baseEnv(t)
	ab := abCmd{fullEnv: env}
	run := func(ws string) string {
		t.Helper()
		r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "copy", "--script", script, "six changes")
		m := sessionRe.FindStringSubmatch(r.stderr)
		if r.code != 0 || m == nil || !strings.Contains(r.stderr, "agentbox changes "+m[1]) {
			t.Fatalf("run: %d %q", r.code, r.stderr)
		}
		return m[1]
	}
	ws := sixWorkspace(t, 10)
	sid := run(ws)
	if b, _ := os.ReadFile(filepath.Join(ws, "edit.txt")); string(b) != "edit\n" {
		t.Fatalf("the workspace changed before apply")
	}
	if r := ab.run(t, "changes"); r.code != 0 || !strings.Contains(r.stdout, sid) || !strings.Contains(r.stdout, "pending") {
		t.Errorf("changes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := ab.run(t, "changes", "--stat", sid); r.code != 0 || !strings.Contains(r.stdout, "6 changes") || !strings.Contains(r.stdout, "mode") {
		t.Errorf("changes --stat: %d %q", r.code, r.stdout)
	}
	r := ab.run(t, "changes", sid)
	for _, want := range []string{"-edit", "+EDITED", "+appended", "deleted file mode", "new file mode", "old mode 100644\nnew mode 100755", "+rewritten"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := ab.run(t, "apply", sid); r.code != 0 {
		t.Fatalf("apply: %d %q", r.code, r.stderr)
	}
	checkSixApplied(t, ws)
	if r := ab.run(t, "apply", sid); r.code != 1 {
		t.Errorf("second apply: %d %q", r.code, r.stderr)
	}

	// A conflict: the workspace changes where the session did; nothing applies.
	ws2 := sixWorkspace(t, 10)
	sid2 := run(ws2)
	writeTestFile(t, filepath.Join(ws2, "src", "append.txt"), "mine\n")
	if r := ab.run(t, "apply", sid2); r.code != 1 || !strings.Contains(r.stderr, "src/append.txt") || !strings.Contains(r.stderr, "nothing was applied") {
		t.Errorf("conflicting apply: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws2, "edit.txt")); string(b) != "edit\n" {
		t.Errorf("a change was applied despite the conflict")
	}
	if r := ab.run(t, "discard", sid2); r.code != 0 {
		t.Errorf("discard: %d %q", r.code, r.stderr)
	}
	if r := ab.run(t, "changes"); !strings.Contains(r.stdout, "no pending changes") {
		t.Errorf("after discard: %q", r.stdout)
	}
	if r := ab.run(t, "gc"); r.code != 0 || !strings.Contains(r.stdout, sid) || !strings.Contains(r.stdout, sid2) {
		t.Errorf("gc: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := ab.run(t, "changes", "--all"); strings.Contains(r.stdout, sid) {
		t.Errorf("gc left %s: %q", sid, r.stdout)
	}
}

// TestCopyDiskBound: writing past sandbox.limits.disk fails with ENOSPC in
// the sandbox, and the run says so outside.
func TestCopyDiskBound(t *testing.T) {
	testutil.RequireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("the disk bound needs agentbox to run as root (a loop-mounted image)")
	}
	dir := t.TempDir()
	pol, script := filepath.Join(dir, "p.yaml"), filepath.Join(dir, "s.yaml")
	writeTestFile(t, pol, allowAll+"sandbox:\n  limits: {disk: 16MiB}\n")
	writeTestFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "dd if=/dev/zero of=big bs=1M count=64; echo rc=$?"}}
  - content: done
`)
	ws := sixWorkspace(t, 10)
	r := agentbox(t, nil, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "copy", "--script", script, "fill")
	if !strings.Contains(r.stderr, "ENOSPC") || !strings.Contains(r.stderr, "filled its disk bound") || !strings.Contains(r.stderr, "16 MiB") {
		t.Errorf("run: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "big")); err == nil {
		t.Errorf("the workspace was written")
	}
}
