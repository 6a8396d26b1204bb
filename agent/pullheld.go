package agent

import "github.com/agentbox/agentbox/workspace"

// RecordHeld records the changes a session's end held back from a copy
// that came over the sandbox's channel (Kubernetes): an alarm each, as a
// promotion's held changes are.
func (t *Tools) RecordHeld(cp *workspace.Checkpoint) error {
	if cp == nil {
		return nil
	}
	return t.recordCheckpoint(cp, "")
}
