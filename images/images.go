// Package images builds agentbox's sandbox images from the Dockerfiles
// embedded in the binary, bootstrapping the Debian base image from Debian
// packages (debootstrap + import) when it cannot be pulled.
package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

//go:embed */Dockerfile
var files embed.FS

// BaseImage is the image the Dockerfiles start from.
const BaseImage = "debian:bookworm-slim"

// Packages the bootstrapped base carries, so the Dockerfile needs no network.
var bootstrapPackages = []string{"bash", "coreutils", "findutils", "grep", "sed", "gawk", "python3", "git", "ca-certificates"}

// Names lists the buildable images (directories under images/).
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Tag is the tag an image name builds to.
func Tag(name string) string { return "agentbox/" + name + ":latest" }

// Engine is the part of the Docker client image building uses.
type Engine interface {
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, ref string, opts image.PullOptions) (io.ReadCloser, error)
	ImageImport(ctx context.Context, src image.ImportSource, ref string, opts image.ImportOptions) (io.ReadCloser, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, opts build.ImageBuildOptions) (build.ImageBuildResponse, error)
}

var _ Engine = (*client.Client)(nil)

// Options control a build.
type Options struct {
	Progress io.Writer // human progress lines
	Mirror   string    // Debian mirror for the bootstrap
	Pull     bool      // try to pull the base first (default true in the CLI)
	// NoCache rebuilds every step (a cold build, as on a fresh machine
	// that has the base); Tag, if set, is the tag built instead of
	// Tag(name) (benchmarks build beside the real image).
	NoCache bool
	Tag     string
}

// Build builds agentbox/NAME:latest from the embedded Dockerfile.
func Build(ctx context.Context, eng Engine, name string, opts Options) (string, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	df, err := files.ReadFile(path.Join(name, "Dockerfile"))
	if err != nil {
		return "", fmt.Errorf("no image %q; known images: %s", name, strings.Join(Names(), ", "))
	}
	if name == "base" {
		if err := EnsureBase(ctx, eng, opts); err != nil {
			return "", err
		}
	} else if _, err := eng.ImageInspect(ctx, Tag("base")); err != nil {
		// A toolchain image starts from agentbox/base: build that first.
		base := opts
		base.Tag, base.NoCache = "", false
		if _, err := Build(ctx, eng, "base", base); err != nil {
			return "", err
		}
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	_ = tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0)})
	_, _ = tw.Write(df)
	_ = tw.Close()
	tag := Tag(name)
	if opts.Tag != "" {
		tag = opts.Tag
	}
	fmt.Fprintf(opts.Progress, "building %s\n", tag)
	resp, err := eng.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "default", NoCache: opts.NoCache,
		Labels: map[string]string{"org.agentbox.image": name},
	})
	if err != nil {
		return "", fmt.Errorf("building %s: %w", tag, err)
	}
	defer resp.Body.Close()
	if err := FollowJSON(resp.Body, opts.Progress); err != nil {
		return "", fmt.Errorf("building %s: %w", tag, err)
	}
	img, err := eng.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("building %s: the image is not there after the build: %w", tag, err)
	}
	return img.ID, nil
}

// EnsureBase makes BaseImage present: already there, pulled, or
// bootstrapped from Debian packages.
func EnsureBase(ctx context.Context, eng Engine, opts Options) error {
	if _, err := eng.ImageInspect(ctx, BaseImage); err == nil {
		return nil
	}
	if opts.Pull {
		fmt.Fprintf(opts.Progress, "pulling %s\n", BaseImage)
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		rc, err := eng.ImagePull(pctx, BaseImage, image.PullOptions{})
		if err == nil {
			err = FollowJSON(rc, io.Discard)
			rc.Close()
		}
		cancel()
		if err == nil {
			return nil
		}
		fmt.Fprintf(opts.Progress, "cannot pull %s (%v); bootstrapping it from Debian packages instead\n", BaseImage, firstLine(err))
	}
	return Bootstrap(ctx, eng, opts)
}

// Bootstrap builds BaseImage locally with debootstrap and imports it.
func Bootstrap(ctx context.Context, eng Engine, opts Options) error {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	deb, err := exec.LookPath("debootstrap")
	if err != nil {
		return errors.New("cannot bootstrap " + BaseImage + ": debootstrap is not installed; install it (apt-get install debootstrap) or load the image (docker load)")
	}
	if os.Geteuid() != 0 {
		return errors.New("cannot bootstrap " + BaseImage + ": debootstrap needs root; run `sudo agentbox image build` once")
	}
	// Packages are verified against Debian's archive keyring; without it
	// debootstrap would install unverified packages.
	const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
	if _, err := os.Stat(keyring); err != nil {
		return errors.New("cannot bootstrap " + BaseImage + ": " + keyring + " is missing, so packages could not be verified; install it (apt-get install debian-archive-keyring)")
	}
	mirror := opts.Mirror
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	dir, err := os.MkdirTemp("", "agentbox-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(opts.Progress, "bootstrapping %s from %s with debootstrap (about a minute or two)\n", BaseImage, mirror)
	cmd := exec.CommandContext(ctx, deb, "--keyring="+keyring, "--variant=minbase", "--include="+strings.Join(bootstrapPackages, ","), "bookworm", dir, mirror)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap failed: %v; last output: %s", err, lastLines(log.String(), 3))
	}
	// Trim caches so the image stays small.
	for _, p := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		ents, _ := os.ReadDir(path.Join(dir, p))
		for _, e := range ents {
			if e.Name() != "partial" && e.Name() != "lock" {
				_ = os.RemoveAll(path.Join(dir, p, e.Name()))
			}
		}
	}
	fmt.Fprintf(opts.Progress, "importing the root filesystem as %s\n", BaseImage)
	tarCmd := exec.CommandContext(ctx, "tar", "-C", dir, "--numeric-owner", "-c", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	rc, err := eng.ImageImport(ctx, image.ImportSource{Source: out, SourceName: "-"}, BaseImage, image.ImportOptions{
		Changes: []string{`CMD ["bash"]`, "ENV LANG=C.UTF-8"},
	})
	if err != nil {
		_ = tarCmd.Process.Kill()
		_ = tarCmd.Wait()
		return fmt.Errorf("importing %s: %w", BaseImage, err)
	}
	ierr := FollowJSON(rc, io.Discard)
	rc.Close()
	if ierr != nil {
		_ = tarCmd.Process.Kill() // it may be blocked on a pipe nobody reads
	}
	if werr := tarCmd.Wait(); werr != nil && ierr == nil {
		ierr = fmt.Errorf("tar: %w", werr)
	}
	if ierr != nil {
		return fmt.Errorf("importing %s: %w", BaseImage, ierr)
	}
	return nil
}

// FollowJSON reads the engine's JSON message stream, prints stream lines and
// returns the first error message.
func FollowJSON(r io.Reader, progress io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if s := strings.TrimRight(m.Stream, "\n"); s != "" {
			fmt.Fprintln(progress, "  "+s)
		}
	}
	return sc.Err()
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
