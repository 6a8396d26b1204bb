package kubernetes

import (
	"slices"
	"strings"
)

// AgentSandboxGroups are the API groups of kubernetes-sigs/agent-sandbox
// (Sandbox; SandboxTemplate, SandboxClaim, SandboxWarmPool).
var AgentSandboxGroups = []string{"agents.x-k8s.io", "extensions.agents.x-k8s.io"}

// agentSandboxCheck says whether the cluster has agent-sandbox's CRDs. It
// is a note either way: agentbox does not use them (its own warm pool,
// --pool, keeps pods it hardened itself, claimed by optimistic
// concurrency; README: "Kubernetes: warm pool").
func (r *Runtime) agentSandboxCheck() Check {
	groups, err := r.cs.Discovery().ServerGroups()
	if err != nil {
		return Check{Name: "agent-sandbox", Note: true, OK: "could not list the API groups (" + oneLine(err.Error()) + ")"}
	}
	var found []string
	for _, g := range groups.Groups {
		if slices.Contains(AgentSandboxGroups, g.Name) {
			found = append(found, g.Name)
		}
	}
	if len(found) == 0 {
		return Check{Name: "agent-sandbox", Note: true, OK: "agent-sandbox's CRDs (API group agents.x-k8s.io) are not installed; agentbox does not need them (--pool keeps its own warm pods)"}
	}
	return Check{Name: "agent-sandbox", Note: true, OK: "agent-sandbox's CRDs are installed (API groups " + strings.Join(found, ", ") +
		"); agentbox does not use them: its --pool keeps its own hardened pods beside any SandboxWarmPool, and never claims a Sandbox"}
}
