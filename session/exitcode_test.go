package session

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

func TestExitCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("starting: %w", err) }
	for _, tc := range []struct {
		status string
		err    error
		want   int
	}{
		{agent.StatusOK, nil, ExitOK},
		{agent.StatusStepLimit, wrap(agent.ErrStepLimit), ExitLimit},
		{agent.StatusTimeout, wrap(agent.ErrSessionTimeout), ExitLimit},
		{agent.StatusInterrupted, wrap(context.Canceled), ExitInterrupted},
		{agent.StatusError, wrap(sandbox.ErrExecutor), ExitUnavailable},
		{agent.StatusError, wrap(sandbox.ErrUnavailable), ExitUnavailable},
		{agent.StatusError, wrap(sandbox.ErrImageMissing), ExitUnavailable},
		{agent.StatusError, wrap(sandbox.ErrConfig), ExitUsage},
		{agent.StatusError, errors.New("model said no"), ExitFailed},
		{agent.StatusError, nil, ExitFailed},
		{agent.StatusDenied, nil, ExitDenied},
		{agent.StatusTimedOut, nil, ExitTimeout},
		{agent.StatusFailed, nil, ExitFailed},
	} {
		if got := ExitCode(tc.status, tc.err); got != tc.want {
			t.Errorf("ExitCode(%q, %v) = %d, want %d", tc.status, tc.err, got, tc.want)
		}
	}
}
