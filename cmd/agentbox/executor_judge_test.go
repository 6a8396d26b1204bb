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
		argv []string
		want executor.Verdict
	}{
		{[]string{"ls", "-l"}, executor.Allow},
		{[]string{"/usr/bin/rm", "-rf", "x"}, executor.Deny},
		{[]string{"rm", "$(weird) 'quoted'\n"}, executor.Deny},
		{[]string{"python3"}, executor.Ask},
		{[]string{"bash", "-c", "rm x"}, executor.Deny},
	}
	for _, c := range cases {
		if d := j.JudgeArgv(c.argv); d.Verdict != c.want {
			t.Errorf("%q: %v (%s), want %v", c.argv, d.Verdict, d.Rule, c.want)
		}
	}
	if _, err := loadJudge("bad.yaml", []byte("version: 2\n")); err == nil {
		t.Error("a broken policy loaded")
	}
}
