package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentbox/agentbox/workspace"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/devcontainer"
	"github.com/agentbox/agentbox/policy"
	"gopkg.in/yaml.v3"
)

// maxTaskFileBytes bounds the size of a task file.
const maxTaskFileBytes = 16 << 20

// Task is one validated task of a batch. Paths are absolute.
type Task struct {
	ID        string
	Task      string
	Workspace string // source directory, copied for the run, never written
	// Policy is the task's own policy; nil = the batch's default.
	Policy   *policy.Policy
	Model    string        // "" = the batch's model
	MaxSteps int           // 0 = the batch's default
	Timeout  time.Duration // 0 = the policy's session timeout
	// Script replays assistant turns instead of calling a model.
	Script     *agent.Script
	ScriptPath string
	Line       int // in the task file
	// File is the task file as named; Field the task's place in it
	// (tasks[3]; "" in JSON Lines, where Line says it): hints name them.
	File, Field string
	// Devcontainer is the workspace's devcontainer.json (devcontainer:
	// true), checked when the file is loaded; nil = none. Image is its
	// image, set by BuildDevcontainers.
	Devcontainer *devcontainer.Config
	Image        string
}

// rawTask is a task as written in the file.
type rawTask struct {
	ID        string `yaml:"id" json:"id"`
	Task      string `yaml:"task" json:"task"`
	Workspace string `yaml:"workspace" json:"workspace"`
	Policy    string `yaml:"policy" json:"policy"`
	Model     string `yaml:"model" json:"model"`
	MaxSteps  *int   `yaml:"max_steps" json:"max_steps"`
	Timeout   string `yaml:"timeout" json:"timeout"`
	Script    string `yaml:"script" json:"script"`
	// Devcontainer uses the workspace's devcontainer.json.
	Devcontainer bool `yaml:"devcontainer" json:"devcontainer"`
}

var knownFields = []string{"id", "task", "workspace", "policy", "model", "max_steps", "timeout", "script", "devcontainer"}

// safeID is an id usable as a directory name on every filesystem.
var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// reservedIDs are names of files the batch writes beside the task
// directories.
var reservedIDs = map[string]bool{"results.jsonl": true, "summary.json": true, ".work": true, ".lock": true}

// ValidationError lists every problem of a task file, one per line, each
// as file:line: field: what is wrong and what to do.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "\n") }

// LoadOptions tune validation.
type LoadOptions struct {
	// MaxWorkspaceBytes refuses larger source workspaces (0 = DefaultMaxCopyBytes).
	MaxWorkspaceBytes int64
}

// LoadTasks reads and validates a task file: JSON Lines when its name ends
// in .jsonl (one object per line), else YAML (a list of tasks, or a mapping
// with a tasks: list). Relative paths are relative to the file's directory.
// Every problem is reported (as a *ValidationError), not just the first.
func LoadTasks(path string, opts LoadOptions) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("task file: %w; check the path", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTaskFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	if len(data) > maxTaskFileBytes {
		return nil, &ValidationError{[]string{fmt.Sprintf("%s: larger than %d bytes; split the batch", path, maxTaskFileBytes)}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	v := &validator{file: path, dir: filepath.Dir(abs), opts: opts, policies: map[string]*policy.Policy{},
		ids: map[string]int{}, folded: map[string]string{}, sources: map[string]error{},
		scripts: map[string]scriptResult{}}
	if strings.HasSuffix(strings.ToLower(path), ".jsonl") {
		v.parseJSONL(data)
	} else {
		v.parseYAML(data)
	}
	if len(v.problems) == 0 && len(v.tasks) == 0 {
		v.addf(0, "", "no tasks; add at least one task with id, task and workspace")
	}
	if len(v.problems) > 0 {
		return nil, &ValidationError{v.problems}
	}
	return v.tasks, nil
}

type validator struct {
	file, dir string
	opts      LoadOptions
	problems  []string
	tasks     []Task
	policies  map[string]*policy.Policy
	sources   map[string]error        // workspace -> its check, done once
	scripts   map[string]scriptResult // script path -> loaded once
	ids       map[string]int          // id -> line
	folded    map[string]string       // lower-case id -> id
}

func (v *validator) addf(line int, field, format string, args ...any) {
	loc := v.file
	if line > 0 {
		loc = fmt.Sprintf("%s:%d", v.file, line)
	}
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	v.problems = append(v.problems, loc+": "+msg)
}

func (v *validator) parseJSONL(data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxTaskFileBytes)
	line, n := 0, 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var rt rawTask
		if err := dec.Decode(&rt); err != nil {
			v.addf(line, "", "%s; each line is one JSON object with id, task and workspace", strings.TrimPrefix(err.Error(), "json: "))
			n++
			continue
		}
		if dec.More() {
			v.addf(line, "", "more than one JSON value on the line; put one task per line")
		}
		v.check(line, fmt.Sprintf("task %d", n+1), rt, len(v.problems))
		n++
	}
	if err := sc.Err(); err != nil {
		v.addf(line+1, "", "%v", err)
	}
}

func (v *validator) parseYAML(data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		v.problems = append(v.problems, fmt.Sprintf("%s: %s", v.file, strings.TrimPrefix(err.Error(), "yaml: ")))
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	list := root
	if root.Kind == yaml.MappingNode {
		list = nil
		for i := 0; i+1 < len(root.Content); i += 2 {
			k := root.Content[i]
			if k.Value != "tasks" {
				v.addf(k.Line, k.Value, "unknown field; the file has one field, tasks: (a list)")
				continue
			}
			list = root.Content[i+1]
		}
		if list == nil {
			v.addf(root.Line, "", "no tasks: list")
			return
		}
	}
	if list.Kind != yaml.SequenceNode {
		v.addf(list.Line, "tasks", "want a list of tasks, each a mapping with id, task and workspace")
		return
	}
	for i, item := range list.Content {
		field := fmt.Sprintf("tasks[%d]", i)
		if item.Kind != yaml.MappingNode {
			v.addf(item.Line, field, "want a mapping with id, task and workspace")
			continue
		}
		before := len(v.problems)
		for j := 0; j+1 < len(item.Content); j += 2 {
			k := item.Content[j]
			if !known(k.Value) {
				v.addf(k.Line, field+"."+k.Value, "unknown field; known fields: %s", strings.Join(knownFields, ", "))
			}
		}
		var rt rawTask
		if err := item.Decode(&rt); err != nil {
			v.addf(item.Line, field, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			continue
		}
		v.check(item.Line, field, rt, before)
	}
}

func known(name string) bool {
	for _, f := range knownFields {
		if f == name {
			return true
		}
	}
	return false
}

// check validates one task and appends it when it is valid.
// Problems found since before (unknown fields) make the task invalid too.
func (v *validator) check(line int, field string, rt rawTask, before int) {
	t := Task{ID: rt.ID, Task: strings.TrimSpace(rt.Task), Model: rt.Model, Line: line, File: v.file}
	if strings.HasPrefix(field, "tasks[") {
		t.Field = field
	}
	switch {
	case rt.ID == "":
		v.addf(line, field+".id", "missing; give every task a unique id (letters, digits, . _ -)")
	case !safeID.MatchString(rt.ID) || reservedIDs[rt.ID]:
		v.addf(line, field+".id", "%q is not a safe directory name; use letters, digits, . _ - (starting with a letter or digit, at most 100)", rt.ID)
	default:
		if prev, dup := v.ids[rt.ID]; dup {
			v.addf(line, field+".id", "duplicate id %q (first at line %d); ids must be unique", rt.ID, prev)
		} else if other, clash := v.folded[strings.ToLower(rt.ID)]; clash {
			v.addf(line, field+".id", "id %q differs from %q only in case; their output directories would collide", rt.ID, other)
		} else {
			v.ids[rt.ID] = line
			v.folded[strings.ToLower(rt.ID)] = rt.ID
		}
	}
	if t.Task == "" {
		v.addf(line, field+".task", "missing; say what the agent should do")
	}
	if rt.Workspace == "" {
		v.addf(line, field+".workspace", "missing; name the directory the task works on (it is copied, never modified)")
	} else {
		ws := v.abs(rt.Workspace)
		err := v.source(ws)
		if err != nil {
			v.addf(line, field+".workspace", "%v", err)
		}
		t.Workspace = ws
		if rt.Devcontainer && err == nil {
			dc, err := devcontainer.Load(ws)
			if err != nil {
				v.addf(line, field+".devcontainer", "%v", err)
			}
			t.Devcontainer = dc
		}
	}
	if rt.Policy != "" {
		p, err := v.policy(v.abs(rt.Policy))
		if err != nil {
			for _, msg := range policy.LoadErrors(err) {
				v.addf(line, field+".policy", "%s", msg)
			}
		}
		t.Policy = p
	}
	if rt.MaxSteps != nil {
		if *rt.MaxSteps < 1 {
			v.addf(line, field+".max_steps", "%d: want at least 1", *rt.MaxSteps)
		}
		t.MaxSteps = *rt.MaxSteps
	}
	if rt.Timeout != "" {
		d, err := time.ParseDuration(rt.Timeout)
		if err != nil || d <= 0 {
			v.addf(line, field+".timeout", "%q: want a positive duration such as 90s or 10m", rt.Timeout)
		}
		t.Timeout = d
	}
	if rt.Script != "" {
		if rt.Model != "" {
			v.addf(line, field+".script", "a task has a script or a model, not both; remove one")
		}
		t.ScriptPath = v.abs(rt.Script)
		s, err := v.script(t.ScriptPath)
		if err != nil {
			v.addf(line, field+".script", "%v", err)
		}
		t.Script = s
	}
	if len(v.problems) == before {
		v.tasks = append(v.tasks, t)
	}
}

func (v *validator) maxBytes() int64 {
	if v.opts.MaxWorkspaceBytes > 0 {
		return v.opts.MaxWorkspaceBytes
	}
	return workspace.DefaultMaxCopyBytes
}

func (v *validator) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(v.dir, p)
}

type scriptResult struct {
	s   *agent.Script
	err error
}

// source checks each source workspace once: a batch of 200,000 tasks on
// one workspace walks it once, not 200,000 times.
func (v *validator) source(ws string) error {
	if err, ok := v.sources[ws]; ok {
		return err
	}
	err := checkSource(ws, v.maxBytes())
	v.sources[ws] = err
	return err
}

// script loads each script file once.
func (v *validator) script(path string) (*agent.Script, error) {
	if r, ok := v.scripts[path]; ok {
		return r.s, r.err
	}
	s, err := agent.LoadScript(path)
	v.scripts[path] = scriptResult{s, err}
	return s, err
}

// policy loads each policy file once.
func (v *validator) policy(path string) (*policy.Policy, error) {
	if p, ok := v.policies[path]; ok {
		if p == nil {
			return nil, errors.New("invalid (see above)")
		}
		return p, nil
	}
	p, err := policy.Load(path)
	v.policies[path] = p
	return p, err
}

// checkSource checks that a source workspace is a directory no larger than
// max bytes.
func checkSource(dir string, max int64) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s does not exist; create it or fix the path (relative paths are relative to the task file)", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; name a directory to copy", dir)
	}
	if _, err := workspace.TreeSize(dir, max); err != nil {
		return err
	}
	return nil
}
