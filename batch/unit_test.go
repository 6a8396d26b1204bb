package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/agent"
)

func TestCopyTreeKeepsSymlinksAndModes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	writeFile(t, filepath.Join(src, "a.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(src, "a.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(src, "ro", "f"), "f")
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a.sh", filepath.Join(src, "ro", "rel")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "ro"), 0o755) })
	before := treeState(t, src)
	dst := filepath.Join(t.TempDir(), "dst")
	if err := CopyTree(src, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeTree(dst) })
	after := treeState(t, dst)
	for k, v := range before {
		if k == "." {
			continue
		}
		if after[k] != v {
			t.Errorf("%s: copy %q, source %q", k, after[k], v)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dst, "out")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink out of the source was followed: %v %v", fi, err)
	}
	if fmtState := treeState(t, src); len(fmtState) != len(before) {
		t.Errorf("source changed")
	}
	if err := removeTree(dst); err != nil {
		t.Errorf("read-only directories block removal: %v", err)
	}
}

func TestCopyTreeSizeCap(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "big"), strings.Repeat("x", 4096))
	err := CopyTree(src, filepath.Join(t.TempDir(), "dst"), 1024)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-copy") {
		t.Fatalf("want ErrTooLarge with advice, got %v", err)
	}
	if _, err := treeSize(src, 1024); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("treeSize: %v", err)
	}
	if err := CopyTree(src, filepath.Join(t.TempDir(), "dst2"), 1<<20); err != nil {
		t.Fatal(err)
	}
}

func TestLoadTasksErrorsNameTheirLine(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "f"), "x")
	writeFile(t, filepath.Join(dir, "bad-policy.yaml"), "version: 1\nsandbox: {workspace: sideways}\n")
	writeFile(t, filepath.Join(dir, "s.yaml"), "turns: [{content: hi}]\n")
	cases := []struct {
		name, file, body string
		want             []string
	}{
		{"yaml", "tasks.yaml", `tasks:
  - id: a
    task: t
    workspace: ws
  - id: a
    task: t
    workspace: ws
  - id: ../up
    task: t
    workspace: ws
  - id: b
    task: t
    workspace: nowhere
  - id: c
    task: t
    workspace: ws
    colour: red
  - id: d
    task: t
    workspace: ws
    policy: bad-policy.yaml
  - id: e
    task: t
    workspace: ws
    timeout: soon
    max_steps: 0
  - id: f
    workspace: ws
    script: s.yaml
    model: gpt
  - id: A
    task: t
    workspace: ws
`, []string{
			`tasks.yaml:5: tasks[1].id: duplicate id "a" (first at line 2)`,
			`tasks.yaml:8: tasks[2].id: "../up" is not a safe directory name`,
			`tasks.yaml:11: tasks[3].workspace: ` + filepath.Join(dir, "nowhere") + ` does not exist`,
			`tasks.yaml:17: tasks[4].colour: unknown field`,
			`tasks.yaml:18: tasks[5].policy: ` + filepath.Join(dir, "bad-policy.yaml") + `:2`,
			`tasks.yaml:22: tasks[6].max_steps: 0: want at least 1`,
			`tasks.yaml:22: tasks[6].timeout: "soon"`,
			`tasks.yaml:27: tasks[7].task: missing`,
			`tasks.yaml:27: tasks[7].script: a task has a script or a model, not both`,
			`tasks.yaml:31: tasks[8].id: id "A" differs from "a" only in case`,
		}},
		{"jsonl", "tasks.jsonl", `{"id":"a","task":"t","workspace":"ws"}

{"id":"b","task":"t","workspace":"ws","extra":1}
{"id":"c","task":"t"
{"id":"results.jsonl","task":"t","workspace":"ws"}
`, []string{
			`tasks.jsonl:3: unknown field "extra"`,
			`tasks.jsonl:4: unexpected EOF`,
			`tasks.jsonl:5: task 4.id: "results.jsonl" is not a safe directory name`,
		}},
		{"empty", "empty.yaml", "tasks: []\n", []string{"empty.yaml: no tasks"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			writeFile(t, path, c.body)
			_, err := LoadTasks(path, LoadOptions{})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			got := strings.Join(ve.Problems, "\n")
			for _, w := range c.want {
				if !strings.Contains(got, filepath.Join(dir, "")+"/"+w) && !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
	path := filepath.Join(dir, "good.yaml")
	writeFile(t, path, "- {id: x, task: do it, workspace: ws, script: s.yaml, timeout: 90s, max_steps: 4}\n")
	tasks, err := LoadTasks(path, LoadOptions{})
	if err != nil || len(tasks) != 1 || tasks[0].Workspace != ws || tasks[0].Script == nil || tasks[0].MaxSteps != 4 || tasks[0].Line != 1 {
		t.Fatalf("good file: %v %+v", err, tasks)
	}
	if _, err := LoadTasks(path, LoadOptions{MaxWorkspaceBytes: 0}); err != nil {
		t.Fatal(err)
	}
}

func TestResultsFileTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	writeFile(t, path, `{"id":"a","status":"ok"}`+"\n"+`{"id":"b","status":"error"}`+"\n"+`{"id":"c","sta`)
	if _, _, err := openResults(path, false); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("existing results without --resume: %v", err)
	}
	r, done, err := openResults(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done["b"].Status != "error" {
		t.Fatalf("done: %+v", done)
	}
	if err := r.append(Line{ID: "c", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	r.close()
	lines := readLines(t, path)
	if len(lines) != 3 || lines[2].ID != "c" {
		t.Fatalf("after append: %+v", lines)
	}
	writeFile(t, path, `{"id":"a"}`+"\n"+"garbage\n"+`{"id":"b"}`+"\n")
	if _, _, err := openResults(path, true); err == nil || !strings.Contains(err.Error(), "results.jsonl:2") {
		t.Fatalf("damaged middle line: %v", err)
	}
}

func TestApplyRefusesConflicts(t *testing.T) {
	src := t.TempDir()
	for name, body := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "x\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wc, err := NewWorkCopy(src)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	// The session edits a.txt, adds new/c.txt, deletes gone.txt.
	_ = os.WriteFile(filepath.Join(wc.Dir, "a.txt"), []byte("A\n"), 0o644)
	_ = os.MkdirAll(filepath.Join(wc.Dir, "new"), 0o755)
	_ = os.WriteFile(filepath.Join(wc.Dir, "new", "c.txt"), []byte("c\n"), 0o600)
	_ = os.Remove(filepath.Join(wc.Dir, "gone.txt"))
	after, _ := agent.Snapshot(wc.Dir)
	changes := agent.Diff(wc.Before, after)
	if len(changes) != 3 {
		t.Fatalf("changes %+v", changes)
	}
	// Meanwhile someone edits a.txt in the source: nothing is applied.
	_ = os.WriteFile(filepath.Join(src, "a.txt"), []byte("concurrent\n"), 0o644)
	if err := wc.Apply(changes); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("want a conflict naming a.txt, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(b) != "concurrent\n" {
		t.Errorf("a conflicting change was overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(src, "new", "c.txt")); err == nil {
		t.Errorf("a change was applied despite the conflict")
	}
	// Without the conflict everything applies, modes included.
	_ = os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	if err := wc.Apply(changes); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(b) != "A\n" {
		t.Errorf("a.txt = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(src, "new", "c.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new/c.txt: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(src, "gone.txt")); err == nil {
		t.Errorf("gone.txt not deleted")
	}
}
