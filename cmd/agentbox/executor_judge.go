package main

import (
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/executor"
)

// loadJudge builds the executor's exec-time judge from the policy source
// the host sent in hello: policy.DecideExec, the same command rules as the
// up-front check applied to one executed argv (no shell parsing). The
// executor caches its decisions.
func loadJudge(name string, src []byte) (executor.Judge, error) {
	p, err := policy.Parse(name, src)
	if err != nil {
		return nil, err
	}
	return policyJudge{p}, nil
}

// policyJudge adapts a policy to the executor's Judge.
type policyJudge struct{ p *policy.Policy }

var _ executor.Judge = policyJudge{}

// JudgeExec decides a program as executed: argv, the executable when
// argv[0] does not name it, the names its content has in the image, and
// whether it is one of the image's executables; the strictest wins. A
// program run as part of a toolchain's command is denied only by what
// denies it by name (or by unknown_binaries).
func (j policyJudge) JudgeExec(x executor.Exec) executor.Decision {
	var d policy.Decision
	if x.Toolchain != "" {
		d = j.p.DecideToolchainProgram(x.Toolchain, x.Exe, x.Argv, x.Names, x.Unknown)
	} else {
		d = j.p.DecideProgram(x.Exe, x.Argv, x.Names, x.Unknown)
	}
	reason := d.Reason
	if d.Why != "" && !strings.Contains(reason, d.Why) {
		reason += " (" + d.Why + ")"
	}
	return executor.Decision{Verdict: d.Verdict, Rule: d.Rule, Reason: reason}
}
