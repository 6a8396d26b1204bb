package docker

import "github.com/agentbox/agentbox/sandbox"

// Container labels: the owner identity shared by every backend (see
// sandbox.OwnerLabels and sandbox.JudgeOwner).
const (
	LabelSession   = sandbox.LabelSession
	LabelOwner     = sandbox.LabelOwner
	LabelOwnerNS   = sandbox.LabelOwnerNS
	LabelOwnerBoot = sandbox.LabelOwnerBoot
	LabelHost      = sandbox.LabelHost
	LabelTimeout   = sandbox.LabelTimeout
)

// OwnerLabel identifies the current process by pid and start time.
func OwnerLabel() string { return sandbox.OwnerLabel() }

// OwnerLabels are the labels identifying the current process.
func OwnerLabels() map[string]string { return sandbox.OwnerLabels() }

func hostname() string { return sandbox.Hostname() }
