package main

import (
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/executor"
	"mvdan.cc/sh/v3/syntax"
)

// loadJudge builds the executor's exec-time judge from the policy source
// the host sent in hello. Until the policy package decides an argv
// directly, the argv is quoted back into one simple command and decided
// like a script: the same command rules as the up-front check.
func loadJudge(name string, src []byte) (executor.Judge, error) {
	p, err := policy.Parse(name, src)
	if err != nil {
		return nil, err
	}
	return executor.JudgeFunc(func(argv []string) executor.Decision {
		return judgeArgv(p, argv)
	}), nil
}

func judgeArgv(p *policy.Policy, argv []string) executor.Decision {
	words := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return executor.Decision{Verdict: executor.Deny, Rule: "exec-time check", Reason: "an argument cannot be quoted for the policy check: " + err.Error()}
		}
		words[i] = q
	}
	d := p.Decide(policy.Action{Kind: policy.Command, Command: strings.Join(words, " ")})
	v := executor.Deny
	switch d.Verdict {
	case policy.Allow:
		v = executor.Allow
	case policy.Ask:
		v = executor.Ask
	}
	return executor.Decision{Verdict: v, Rule: d.Rule, Reason: d.Reason}
}
