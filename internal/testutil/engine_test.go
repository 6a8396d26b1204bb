package testutil

import (
	"os"
	"sync"
	"testing"
)

// TestConfigChecksEngineFirst: without an engine, StartSession (through
// Config) skips before the executor binary is built.
func TestConfigChecksEngineFirst(t *testing.T) {
	if os.Getenv("AGENTBOX_REQUIRE_DOCKER") == "1" {
		t.Skip("AGENTBOX_REQUIRE_DOCKER=1: a missing engine fails by design")
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("AGENTBOX_BIN", "")
	binOnce, binPath, binErr = sync.Once{}, "", nil
	t.Cleanup(func() { binOnce, binPath, binErr = sync.Once{}, "", nil })
	if t.Run("no engine", func(t *testing.T) {
		StartSession(t, "")
		t.Error("StartSession went on without an engine")
	}) == false {
		t.Error("the subtest failed instead of skipping")
	}
	if binPath != "" {
		t.Errorf("the binary was built (%s) before the engine was checked", binPath)
	}
}
