package batch

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
)

// configRuntime refuses every sandbox as a bad configuration does.
type configRuntime struct{ sandbox.Runtime }

func (configRuntime) Start(context.Context, sandbox.Config) (sandbox.Session, error) {
	return nil, fmt.Errorf("%w: limits.memory 1KiB is below what a sandbox needs", sandbox.ErrConfig)
}

// TestTaskConfigErrorExits2: a task whose sandbox is refused for its
// configuration is setup_failed with exit 2, as the exit-code table says
// (session.ErrorExitCode), never 1; it is the task's, not infra_failed.
func TestTaskConfigErrorExits2(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src+"/in.txt", "in\n")
	tasks := []Task{{ID: "bad", Task: "t", Workspace: src, Script: script(answer("ok"))}}
	cfg, _, _ := testConfig(t, tasks)
	cfg.Runtime, cfg.NoPool, cfg.Progress = configRuntime{cfg.Runtime}, true, &testutil.LockedBuffer{}
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Tasks) != 1 {
		t.Fatalf("tasks %+v", sum.Tasks)
	}
	l := sum.Tasks[0]
	if l.Status != StatusSetupFailed || l.Exit != session.ExitUsage {
		t.Fatalf("a configuration error: status %s exit %d (want %s, %d): %s", l.Status, l.Exit, StatusSetupFailed, session.ExitUsage, l.Error)
	}
}
