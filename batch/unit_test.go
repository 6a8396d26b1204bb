package batch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

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

// The summary table says how many sandboxes came warm from a pool, and
// says nothing of a pool when no task asked one.
func TestWriteTableSandboxStarts(t *testing.T) {
	s := Summary{Total: 3, OK: 3, Batch: "b1", Tasks: []Line{{ID: "a", Status: "ok"}}}
	var b strings.Builder
	s.WriteTable(&b)
	if strings.Contains(b.String(), "warm") {
		t.Fatalf("no pool, yet:\n%s", b.String())
	}
	s.SandboxStarts = map[string]int{"warm": 2, "cold": 1}
	b.Reset()
	s.WriteTable(&b)
	if !strings.Contains(b.String(), "sandboxes from the warm pool: 2 warm, 1 cold; batch b1\n") {
		t.Fatalf("table:\n%s", b.String())
	}
}
