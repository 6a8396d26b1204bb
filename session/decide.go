package session

import (
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/workspace"
)

// stageDecider decides staged changes by the policy's files.write rules:
// the first deny glob that matches, or no allow glob. An allow glob
// without wildcards names a path explicitly (a host hazard it names is
// then promoted).
func stageDecider(p agent.Decider) workspace.WriteDecider {
	allow, deny := p.FileRules(true)
	return func(rel string) (bool, string, bool) {
		v, rule, glob := policy.MatchFile(allow, deny, rel, true)
		if v != policy.Allow {
			return true, rule, false
		}
		return false, rule, !strings.ContainsAny(glob, "*?[{")
	}
}
