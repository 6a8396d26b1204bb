package session

import (
	"context"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// pullChanges brings a sandbox's changes back to the host when its
// workspace lives inside it (sandbox.Puller: Kubernetes), before the change
// list is taken. Each change the file rules refused to bring back is an
// alarm record. The error (wrapping sandbox.ErrPull) means the host copy
// misses changes; nil when the session has nothing to pull.
func (s *Session) pullChanges(ctx context.Context) error {
	p, ok := s.tools.Session.(sandbox.Puller)
	if !ok {
		return nil
	}
	rep, err := p.Pull(context.WithoutCancel(ctx))
	for _, a := range rep.Alarms {
		if rerr := s.record(&audit.Record{Event: audit.EventAlarm, Rule: a.Rule, Path: a.Path, What: a.What, Action: a.Action}); rerr != nil {
			return rerr
		}
	}
	return err
}
