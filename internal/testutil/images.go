package testutil

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// ToolchainImages are the images built FROM the base with a language
// toolchain (`agentbox image build NAME`); `make test` builds them all
// (make images) before the suites that run on them.
var ToolchainImages = []string{"python", "node", "go", "full"}

// RequireImage skips (or, with AGENTBOX_REQUIRE_DOCKER=1, fails) unless
// the engine has agentbox/NAME:latest; it returns the image's reference.
func RequireImage(t testing.TB, name string) string {
	t.Helper()
	cli := RequireDocker(t)
	ref := sandbox.ImageRef(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		if os.Getenv("AGENTBOX_REQUIRE_DOCKER") == "1" {
			t.Fatalf("image %s is not built and AGENTBOX_REQUIRE_DOCKER=1: %v (run `make images` or `agentbox image build %s`)", ref, err, name)
		}
		t.Skipf("image %s is not built (`agentbox image build %s`): %v", ref, name, err)
	}
	return ref
}
