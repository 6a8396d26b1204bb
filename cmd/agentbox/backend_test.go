package main

import (
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
)

// The table's image-building power is the Runtime's own: Docker builds a
// devcontainer's Dockerfile, Kubernetes (whose nodes cannot pull the local
// engine's images) does not, and has tells the two apart before
// anything connects.
func TestBackendBuildsImages(t *testing.T) {
	var _ sandbox.ImageBuilder = (*docker.Runtime)(nil)
	if _, ok := any((*kubernetes.Runtime)(nil)).(sandbox.ImageBuilder); ok {
		t.Fatal("the kubernetes Runtime is an ImageBuilder: update the remote-build refusal and this test")
	}
	if !backends["docker"].buildsImages {
		t.Error("docker: buildsImages false")
	}
	if backends["kubernetes"].buildsImages {
		t.Error("kubernetes: buildsImages true")
	}
	if has[sandbox.ImageBuilder, *kubernetes.Runtime]() || !has[sandbox.Capable, *kubernetes.Runtime]() {
		t.Error("has does not read the runtime's method set")
	}
}
