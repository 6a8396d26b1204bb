package devcontainer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	in := `{
  // a comment with "quotes" and /* */
  "image": "agentbox/python:latest", /* block
  comment */ "containerEnv": {"URL": "http://x//y/*z*/", "Q": "a\"//b",},
  "postCreateCommand": ["echo", "a,]"],
}`
	out, err := StripJSONC([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	env := v["containerEnv"].(map[string]any)
	if env["URL"] != "http://x//y/*z*/" || env["Q"] != `a"//b` || v["postCreateCommand"].([]any)[1] != "a,]" {
		t.Errorf("string contents changed: %v", v)
	}
	for _, bad := range []string{`{"a": "x`, `{"a": 1 /* open`} {
		if _, err := StripJSONC([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Plain JSON goes through unchanged in meaning, and nothing panics.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{`{"a":"//x","b":[1,2,],}`, `{"a":"\\"} // c`, `[/* x */ "y"]`, `"\"/*"`, `{"k": "v\\\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := StripJSONC([]byte(s))
		var want any
		if json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", s, err)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("valid JSON %q became %q (%v)", s, out, err)
		}
	})
}

func parse(t *testing.T, doc string) (*Config, error) {
	t.Helper()
	ws := t.TempDir()
	dir := filepath.Join(ws, ".devcontainer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM agentbox/base:latest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "devcontainer.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(ws)
}

func TestParseSupported(t *testing.T) {
	c, err := parse(t, `{
	  "name": "x", // ignored
	  "build": {"dockerfile": "Dockerfile", "context": "..", "args": {"V": "1"}},
	  "containerEnv": {"A": "b", "W": "${containerWorkspaceFolder}/src"},
	  "remoteUser": "1000",
	  "postCreateCommand": {"b": "echo b", "a": ["echo", "it's"]},
	  "postStartCommand": "echo start",
	  "customizations": {"vscode": {}},
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Build == nil || filepath.Base(c.Build.Dockerfile) != "Dockerfile" || c.Build.Args["V"] != "1" || c.Image != "" {
		t.Errorf("build: %+v", c.Build)
	}
	if c.Env["A"] != "b" || c.Env["W"] != "/workspace/src" || c.User != "1000:1000" {
		t.Errorf("env/user: %v %q", c.Env, c.User)
	}
	var got []string
	for _, cmd := range c.Commands {
		got = append(got, cmd.Field+"="+cmd.Script)
	}
	want := []string{"postCreateCommand.a='echo' 'it'\\''s'", "postCreateCommand.b=echo b", "postStartCommand=echo start"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

// Every field that would loosen the sandbox or reach the host is refused
// by name.
func TestRefusedFields(t *testing.T) {
	cases := map[string]string{
		"features":          `"features": {"ghcr.io/devcontainers/features/node:1": {}}`,
		"runArgs":           `"runArgs": ["--privileged"]`,
		"privileged":        `"privileged": true`,
		"capAdd":            `"capAdd": ["SYS_PTRACE"]`,
		"securityOpt":       `"securityOpt": ["seccomp=unconfined"]`,
		"mounts":            `"mounts": ["source=/,target=/host,type=bind"]`,
		"workspaceMount":    `"workspaceMount": "source=/,target=/workspace,type=bind"`,
		"forwardPorts":      `"forwardPorts": [8080]`,
		"appPort":           `"appPort": 3000`,
		"dockerComposeFile": `"dockerComposeFile": "compose.yml"`,
		"initializeCommand": `"initializeCommand": "touch /tmp/host-marker"`,
		"hostRequirements":  `"hostRequirements": {"gpu": true}`,
		"somethingNew":      `"somethingNew": 1`,
		"containerEnv.H":    `"containerEnv": {"H": "${localEnv:HOME}"}`,
		"remoteUser":        `"remoteUser": "root"`,
		"containerUser":     `"containerUser": "vscode"`,
		"build.context":     `"build": {"dockerfile": "Dockerfile", "context": "../.."}`,
		"build.dockerfile":  `"build": {"dockerfile": "/etc/passwd"}`,
		"build.options":     `"build": {"dockerfile": "Dockerfile", "options": ["--network=host"]}`,
		"build":             `"build": {"dockerfile": "Dockerfile", "network": "host"}`,
		"build.args.T":      `"build": {"dockerfile": "Dockerfile", "args": {"T": "${localEnv:GITHUB_TOKEN}"}}`,
	}
	for field, frag := range cases {
		doc := `{"image": "agentbox/base:latest", ` + frag + `}`
		if strings.HasPrefix(field, "build.") {
			doc = `{` + frag + `}`
		}
		_, err := parse(t, doc)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), ": "+field+": ") {
			t.Errorf("%s: got %v", field, err)
		}
	}
	if _, err := parse(t, `{"name": "none"}`); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "image") {
		t.Errorf("no image: %v", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrRefused) {
		t.Errorf("no devcontainer.json: %v", err)
	}
}
