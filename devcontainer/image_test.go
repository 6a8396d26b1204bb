package devcontainer

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
)

// fakeBuilder is a sandbox.ImageBuilder that records builds.
type fakeBuilder struct {
	have   map[string]bool
	builds []sandbox.ImageBuild
	files  map[string]string // the last build context's files
	err    error             // what BuildImage returns
}

func (f *fakeBuilder) HasImage(_ context.Context, ref string) (bool, error) { return f.have[ref], nil }

func (f *fakeBuilder) BuildImage(_ context.Context, b sandbox.ImageBuild) error {
	f.builds = append(f.builds, b)
	f.files = map[string]string{}
	tr := tar.NewReader(b.Context)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(tr)
		f.files[h.Name] = string(data)
	}
	if f.err != nil {
		return f.err
	}
	f.have[b.Tag] = true
	return nil
}

func buildWorkspace(t *testing.T) *Config {
	t.Helper()
	ws := t.TempDir()
	dir := filepath.Join(ws, ".devcontainer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"devcontainer.json": `{"build": {"dockerfile": "Dockerfile", "context": "..", "args": {"V": "1"}, "target": "dev"}}`,
		"Dockerfile":        "FROM agentbox/base:latest\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "app.txt"), []byte("app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(ws)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A Dockerfile is built once by the runtime's builder, with its context,
// args, target and label, under a content-hash tag; a second call finds
// the tag and builds nothing.
func TestImageBuildsOnceThroughTheBuilder(t *testing.T) {
	c := buildWorkspace(t)
	b := &fakeBuilder{have: map[string]bool{}}
	var progress strings.Builder
	tag, err := Image(context.Background(), b, c, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tag, "agentbox-devcontainer:") || len(b.builds) != 1 {
		t.Fatalf("tag %q after %d builds", tag, len(b.builds))
	}
	got := b.builds[0]
	if got.Tag != tag || got.Dockerfile != dockerfileName || got.Args["V"] != "1" || got.Target != "dev" || got.Labels["org.agentbox.devcontainer"] != c.Path || got.Progress != &progress {
		t.Errorf("build request: %+v", got)
	}
	if b.files[dockerfileName] != "FROM agentbox/base:latest\n" || b.files["app.txt"] != "app\n" {
		t.Errorf("build context: %v", b.files)
	}
	if !strings.Contains(progress.String(), "building the devcontainer's Dockerfile as "+tag) {
		t.Errorf("progress: %q", progress.String())
	}
	again, err := Image(context.Background(), b, c, nil)
	if err != nil || again != tag || len(b.builds) != 1 {
		t.Errorf("second call: %q %v after %d builds", again, err, len(b.builds))
	}
}

// A failed step names the Dockerfile; a build that could not start says so.
func TestImageBuildErrors(t *testing.T) {
	c := buildWorkspace(t)
	step := &fakeBuilder{have: map[string]bool{}, err: &sandbox.BuildFailed{Err: errors.New("RUN false: exit 1")}}
	_, err := Image(context.Background(), step, c, nil)
	if want := "building the devcontainer's Dockerfile " + c.Build.Dockerfile + ": RUN false: exit 1"; err == nil || err.Error() != want {
		t.Errorf("failed step: %v, want %q", err, want)
	}
	start := &fakeBuilder{have: map[string]bool{}, err: errors.New("engine unreachable")}
	_, err = Image(context.Background(), start, c, nil)
	if want := "building the devcontainer's Dockerfile: engine unreachable"; err == nil || err.Error() != want {
		t.Errorf("build not started: %v, want %q", err, want)
	}
}

// An image named by the devcontainer.json needs no builder.
func TestImageNamedNeedsNoBuilder(t *testing.T) {
	img, err := Image(context.Background(), nil, &Config{Image: "agentbox/python:latest"}, nil)
	if err != nil || img != "agentbox/python:latest" {
		t.Errorf("%q %v", img, err)
	}
}
