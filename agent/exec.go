package agent

import "context"

// Exec statuses, recorded in session_end.
const (
	StatusDenied   = "denied"    // the policy (or the approver) refused the command
	StatusFailed   = "failed"    // the command ran and exited non-zero
	StatusTimedOut = "timed_out" // the command hit its call timeout
)

// ExecStatus is the status of one exec (session.Exec: one execute_bash
// call in a fresh sandbox), as session_end records it.
func ExecStatus(ctx context.Context, o Outcome) string {
	switch {
	case ctx.Err() != nil:
		return StatusInterrupted
	case o.Err != nil:
		return StatusError
	case o.Denied:
		return StatusDenied
	case o.TimedOut:
		return StatusTimedOut
	case o.ExitCode != 0:
		return StatusFailed
	}
	return StatusOK
}

// answered is an Approver that gives an answer obtained earlier.
type answered struct{ ap Approval }

func (a answered) Approve(context.Context, ApprovalRequest) (Approval, error) { return a.ap, nil }
