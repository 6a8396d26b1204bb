package images

import (
	"slices"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
)

// Every embedded Dockerfile is an image the --image shorthand knows, and
// the other way round.
func TestNamesMatchShorthand(t *testing.T) {
	if got := Names(); !slices.Equal(got, sandbox.ImageNames) {
		t.Fatalf("embedded images %v, sandbox.ImageNames %v", got, sandbox.ImageNames)
	}
	for _, n := range Names() {
		if sandbox.ImageRef(n) != Tag(n) {
			t.Errorf("ImageRef(%q) = %q, want %q", n, sandbox.ImageRef(n), Tag(n))
		}
	}
	for _, s := range []string{"ubuntu", "agentbox/python:latest", "python:3.12", "", "registry.example/python"} {
		if sandbox.ImageRef(s) != s {
			t.Errorf("ImageRef(%q) = %q, want it unchanged", s, sandbox.ImageRef(s))
		}
	}
}
