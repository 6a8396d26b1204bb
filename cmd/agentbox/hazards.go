package main

import (
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/workspace"
)

// The policy tools (policy check --within, policy diff, the trust check of
// ./agentbox.yaml) count a literal files.write.allow entry that lifts a
// host hazard as looser: they ask the workspace package, which decides
// the hazards, which paths are hazards (policy sits below workspace).
func init() {
	policy.SetHostHazard(func(rel string) string {
		_, why := workspace.PathHazard(rel)
		return why
	})
}
