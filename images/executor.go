package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docker/docker/api/types/build"
)

// ExecutorImage is the image the Kubernetes backend runs: the base image
// with the static agentbox binary at ExecutorPath (a pod cannot mount the
// host's binary).
const ExecutorImage = "agentbox/k8s:latest"

// ExecutorPath is where ExecutorImage holds the binary.
const ExecutorPath = "/.agentbox/agentbox"

// BuildExecutor builds ExecutorImage from the base image (built first when
// missing) and the static binary exe, labelled with labels (the binary's
// version and protocol).
func BuildExecutor(ctx context.Context, eng Engine, exe string, labels map[string]string, opts Options) (string, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	base := Tag("base")
	if _, err := eng.ImageInspect(ctx, base); err != nil {
		if _, err := Build(ctx, eng, "base", opts); err != nil {
			return "", fmt.Errorf("building %s first: %w", base, err)
		}
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		return "", fmt.Errorf("reading the agentbox binary: %w", err)
	}
	df := []byte("FROM " + base + "\nCOPY agentbox " + ExecutorPath + "\n")
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, df}, {"agentbox", 0o555, bin}} {
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write(f.data)
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	all := map[string]string{"org.agentbox.image": "k8s"}
	for k, v := range labels {
		all[k] = v
	}
	fmt.Fprintf(opts.Progress, "building %s from %s and %s\n", ExecutorImage, base, exe)
	resp, err := eng.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags: []string{ExecutorImage}, Remove: true, ForceRemove: true, NetworkMode: "none", Labels: all,
	})
	if err != nil {
		return "", fmt.Errorf("building %s: %w", ExecutorImage, err)
	}
	defer resp.Body.Close()
	if err := FollowJSON(resp.Body, opts.Progress); err != nil {
		return "", fmt.Errorf("building %s: %w", ExecutorImage, err)
	}
	img, err := eng.ImageInspect(ctx, ExecutorImage)
	if err != nil {
		return "", fmt.Errorf("building %s: the image is not there after the build: %w", ExecutorImage, err)
	}
	return img.ID, nil
}
