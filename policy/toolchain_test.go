package policy

import (
	"slices"
	"testing"
)

// Under the built-in default, what a toolchain runs of itself as part of an
// allowed command runs (the go command's compile and vet ask on their own
// names), but a deny rule still denies it under any of its names, and a
// strict policy's unknown_binaries still decides a file not in the image.
func TestDecideToolchainProgram(t *testing.T) {
	p := Default()
	compile := []string{"/usr/lib/go-1.19/pkg/tool/linux_amd64/compile", "-V=full"}
	if d := p.DecideProgram("", compile, []string{"compile"}, false); d.Verdict != Ask {
		t.Fatalf("compile on its own: %v (%s); the test assumes it asks", d.Verdict, d.Rule)
	}
	if d := p.DecideToolchainProgram("go", "", compile, []string{"compile"}, false); d.Verdict != Allow || d.Rule != "toolchain go" {
		t.Errorf("compile run by go: %v %s", d.Verdict, d.Rule)
	}
	if d := p.DecideToolchainProgram("go", "", []string{"/workspace/go-build1/b001/m.test"}, nil, true); d.Verdict != Allow {
		t.Errorf("go test's test binary: %v %s", d.Verdict, d.Rule)
	}
	for _, c := range []struct {
		argv  []string
		names []string
	}{
		{[]string{"sudo", "id"}, []string{"sudo"}},
		{[]string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1"}, []string{"sudo"}}, // a copy of sudo by content
		{[]string{"nc", "-l"}, nil},
	} {
		if d := p.DecideToolchainProgram("gcc", "", c.argv, c.names, false); d.Verdict != Deny {
			t.Errorf("%v (%v) run by a toolchain: %v %s; a deny rule must still deny it", c.argv, c.names, d.Verdict, d.Rule)
		}
	}
	strict, err := Parse("strict.yaml", []byte("version: 1\ncommands:\n  default: deny\n  unknown_binaries: deny\n  allow: [go test]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := strict.DecideToolchainProgram("go", "", compile, []string{"compile"}, false); d.Verdict != Allow {
		t.Errorf("strict: compile run by go: %v %s (default: deny is about the agent's commands)", d.Verdict, d.Rule)
	}
	if d := strict.DecideToolchainProgram("go", "", []string{"/workspace/go-build1/b001/m.test"}, nil, true); d.Verdict != Deny || d.Rule != "commands.unknown_binaries" {
		t.Errorf("strict: test binary: %v %s; unknown_binaries: deny must still deny it", d.Verdict, d.Rule)
	}
}

// A program's known helpers are predicted with it: pip's uname (as pip,
// pip3.11 or python3 -m pip, and venv's: its ensurepip runs pip), go's C
// compiler and git; not for other programs or other modules.
func TestProgramsPredictHelpers(t *testing.T) {
	p := Default()
	for cmd, want := range map[string][]string{
		"pip --version":              {"pip", "uname", "lsb_release"},
		".venv/bin/pip3.11 list":     {"pip3.11", "uname", "lsb_release"},
		"python3 -m pip list":        {"python3", "uname", "lsb_release"},
		"python3 -m venv .venv":      {"python3", "uname", "lsb_release"},
		"python3 -m ensurepip":       {"python3", "uname", "lsb_release"},
		"go test ./...":              {"go", "gcc", "cc", "git"},
		"python3 -m pytest -q":       {"python3"},
		"python3 pip.py":             {"python3"},
		"ls | grep pip":              {"ls", "grep"},
		"python3 -c 1 && pip --help": {"python3", "pip", "uname", "lsb_release"},
	} {
		if got := p.Decide(Action{Kind: Command, Command: cmd}).Programs(); !slices.Equal(got, want) {
			t.Errorf("%q: programs %v, want %v", cmd, got, want)
		}
	}
}
