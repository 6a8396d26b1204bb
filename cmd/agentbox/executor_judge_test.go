package main

import (
	"testing"

	"github.com/agentbox/agentbox/sandbox/executor"
)

func TestExecutorJudgeUsesCommandRules(t *testing.T) {
	src := []byte("version: 1\ncommands:\n  default: ask\n  allow: [ls, wc, bash]\n  deny:\n    - rm\n")
	j, err := loadJudge("test.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		exe  string
		argv []string
		want executor.Verdict
	}{
		{"", []string{"ls", "-l"}, executor.Allow},
		{"", []string{"/usr/bin/rm", "-rf", "x"}, executor.Deny},
		{"", []string{"rm", "$(weird) 'quoted'\n"}, executor.Deny},
		{"", []string{"python3"}, executor.Ask},
		// shells are not looked into: the rm is judged at its own exec.
		{"", []string{"bash", "-c", "rm x"}, executor.Allow},
		{"", []string{"env", "rm", "x"}, executor.Deny},
		// argv[0] chosen freely: the executable is judged too.
		{"/usr/bin/rm", []string{"ls", "x"}, executor.Deny},
		// a multi-call binary dispatching on argv[0]: argv[0] is judged too.
		{"/bin/busybox", []string{"rm", "x"}, executor.Deny},
		{"/usr/bin/ls", []string{"ls", "x"}, executor.Allow},
	}
	for _, c := range cases {
		if d := j.JudgeExec(c.exe, c.argv); d.Verdict != c.want {
			t.Errorf("%s %q: %v (%s), want %v", c.exe, c.argv, d.Verdict, d.Rule, c.want)
		}
	}
	if _, err := loadJudge("bad.yaml", []byte("version: 2\n")); err == nil {
		t.Error("a broken policy loaded")
	}
}
