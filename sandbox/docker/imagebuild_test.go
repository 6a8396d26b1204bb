package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/image"
)

func dockerfileContext(t *testing.T, df string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "x.Dockerfile", Mode: 0o644, Size: int64(len(df))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(df)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// The Docker runtime's image-building power: a build with args and labels
// lands under its tag and HasImage then finds it; a missing tag is no
// error; a failed step is a *sandbox.BuildFailed carrying the engine's
// message.
func TestDockerBuildsImages(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	id := sandbox.NewID()
	tag := "agentbox-test-imagebuild:" + id
	if ok, err := rt.HasImage(ctx, tag); ok || err != nil {
		t.Fatalf("HasImage of a missing tag: %v %v", ok, err)
	}
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true}) })
	var progress strings.Builder
	err = rt.BuildImage(ctx, sandbox.ImageBuild{
		Context:    dockerfileContext(t, "FROM "+testutil.Image+"\nARG V\nRUN echo \"built-$V\" > /built && cat /built\n"),
		Dockerfile: "x.Dockerfile", Tag: tag, Args: map[string]string{"V": "seven-" + id}, // a new value: the RUN step is never a cached layer of an earlier run
		Labels: map[string]string{"org.agentbox.test": "imagebuild"}, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "built-seven-"+id) {
		t.Errorf("progress has not the build's output: %q", progress.String())
	}
	if ok, err := rt.HasImage(ctx, tag); !ok || err != nil {
		t.Fatalf("HasImage after the build: %v %v", ok, err)
	}
	if img, err := cli.ImageInspect(ctx, tag); err != nil || img.Config.Labels["org.agentbox.test"] != "imagebuild" {
		t.Errorf("the built image's labels: %v %v", img.Config, err)
	}
	failTag := tag + "-fails"
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), failTag, image.RemoveOptions{Force: true}) })
	err = rt.BuildImage(ctx, sandbox.ImageBuild{
		Context: dockerfileContext(t, "FROM "+testutil.Image+"\nRUN exit 3\n"), Dockerfile: "x.Dockerfile", Tag: failTag,
	})
	var failed *sandbox.BuildFailed
	if !errors.As(err, &failed) || !strings.Contains(err.Error(), "exit") {
		t.Errorf("a failed step: %T %v", err, err)
	}
}

// A runtime made by New has no engine connection of its own: building
// says to connect with docker.Connect.
func TestDockerBuildNeedsAConnection(t *testing.T) {
	rt := docker.New(nil)
	err := rt.BuildImage(context.Background(), sandbox.ImageBuild{Tag: "x"})
	if err == nil || !strings.Contains(err.Error(), "docker.Connect") {
		t.Errorf("%v", err)
	}
	if _, err := rt.HasImage(context.Background(), "x"); err == nil {
		t.Error("HasImage without a connection: no error")
	}
}
