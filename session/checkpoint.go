package session

import (
	"fmt"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
)

// recordCheckpoint writes a checkpoint to the audit log: a `changes`
// record of what it promoted (or kept in a copy for apply) and an alarm per
// held change.
func (s *Session) recordCheckpoint(cp *workspace.Checkpoint, tool string) error {
	if err := s.recordChanges(cp, tool); err != nil {
		return err
	}
	return s.recordHeld(cp.CallID, tool, cp.HeldChanges())
}

// recordChanges writes the `changes` record of what cp promoted (or
// kept); none when nothing was.
func (s *Session) recordChanges(cp *workspace.Checkpoint, tool string) error {
	var files []audit.FileChange
	for _, c := range cp.Promoted() {
		if c.Type != workspace.TypeDir || c.Change == workspace.ChangeMode {
			files = append(files, audit.FileChange{Path: c.Path, SHA256: c.After, SHA256Before: c.Before, Bytes: c.Bytes, Change: c.Change})
		}
	}
	if len(files) > 0 {
		reason := fmt.Sprintf("checkpoint %d", cp.Seq)
		if cp.Kept {
			reason = fmt.Sprintf("checkpoint %d, kept in the copy for apply", cp.Seq)
		}
		return s.record(&audit.Record{Event: audit.EventChanges, CallID: cp.CallID, Tool: tool, Reason: reason, Files: files})
	}
	return nil
}

// recordHeld writes an alarm per held change of the call.
func (s *Session) recordHeld(callID, tool string, held []workspace.StagedChange) error {
	for _, c := range held {
		if err := s.record(&audit.Record{Event: audit.EventAlarm, CallID: callID, Tool: tool,
			Rule: c.Held, Path: c.Path, What: "held " + c.Change, Action: "held", Reason: c.Why}); err != nil {
			return err
		}
	}
	return nil
}

// record appends rec to the pipeline's audit log under the session's id.
func (s *Session) record(rec *audit.Record) error {
	rec.Session = s.id
	if err := s.tools.Audit.Append(rec); err != nil {
		return fmt.Errorf("audit log: %w; nothing more runs without an audit record", err)
	}
	return nil
}
