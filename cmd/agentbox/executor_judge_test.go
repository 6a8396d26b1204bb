package main

import (
	"testing"

	"github.com/agentbox/agentbox/sandbox/executor"
)

func TestExecutorJudgeUsesCommandRules(t *testing.T) {
	src := []byte("version: 1\nextends: none\ncommands:\n  default: ask\n  unknown_binaries: deny\n  allow: [ls, wc, bash, cat, head]\n  deny:\n    - rm\n    - python3\n")
	j, err := loadJudge("test.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		exe     string
		argv    []string
		names   []string
		unknown bool
		want    executor.Verdict
	}{
		{"", []string{"ls", "-l"}, nil, false, executor.Allow},
		{"", []string{"/usr/bin/rm", "-rf", "x"}, nil, false, executor.Deny},
		{"", []string{"rm", "$(weird) 'quoted'\n"}, nil, false, executor.Deny},
		{"", []string{"perl"}, nil, false, executor.Ask},
		// shells are not looked into: the rm is judged at its own exec.
		{"", []string{"bash", "-c", "rm x"}, nil, false, executor.Allow},
		{"", []string{"env", "rm", "x"}, nil, false, executor.Deny},
		// argv[0] chosen freely: the executable is judged too.
		{"/usr/bin/rm", []string{"ls", "x"}, nil, false, executor.Deny},
		// a multi-call binary dispatching on argv[0]: argv[0] is judged too.
		{"/bin/busybox", []string{"rm", "x"}, nil, false, executor.Deny},
		{"/usr/bin/ls", []string{"ls", "x"}, nil, false, executor.Allow},
		// known by content: a link or copy of python3 called cat is python3.
		{"", []string{"./cat", "-c", "print(1)"}, []string{"python3.11", "python3"}, false, executor.Deny},
		{"", []string{"/workspace/head", "-c", "x"}, []string{"python3"}, false, executor.Deny},
		{"", []string{"cat", "x"}, []string{"cat"}, false, executor.Allow},
		// not one of the image's executables: unknown_binaries (deny here).
		{"", []string{"./cat", "x"}, nil, true, executor.Deny},
	}
	for _, c := range cases {
		if d := j.JudgeExec(executor.Exec{Exe: c.exe, Argv: c.argv, Names: c.names, Unknown: c.unknown}); d.Verdict != c.want {
			t.Errorf("%s %q: %v (%s), want %v", c.exe, c.argv, d.Verdict, d.Rule, c.want)
		}
	}
	if _, err := loadJudge("bad.yaml", []byte("version: 2\n")); err == nil {
		t.Error("a broken policy loaded")
	}
}
