package testutil

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// WaitCmd waits for cmd to exit, at most d: past it the process is killed
// and the test fails, so a process that never ends fails one test instead
// of hanging the package until go test's own timeout.
func WaitCmd(t testing.TB, cmd *exec.Cmd, d time.Duration, what string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		t.Errorf("%s did not end within %s (killed)", what, d)
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second): // a child still holds its output pipe
			t.Errorf("%s: its output is still held open 30s after it was killed", what)
			return context.DeadlineExceeded
		}
	}
}
