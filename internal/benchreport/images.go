package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	dockerimage "github.com/docker/docker/api/types/image"
)

// toolchainStarts measures session start in each of agentbox's toolchain
// images that is on the engine (the row names its size), against the base
// image's session start row; an image not built is skipped (agentbox
// image build NAME, or make images).
func toolchainStarts(ctx context.Context, rt *docker.Runtime, cfg sandbox.Config, add func(string, int, string, func() error) error) error {
	cli := rt.Client()
	for _, n := range sandbox.ImageNames {
		if n == "base" {
			continue
		}
		ref := sandbox.ImageRef(n)
		img, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s is not built: no session start row for it\n", ref)
			continue
		}
		c := cfg
		c.Image = ref
		name := fmt.Sprintf("session start in %s", ref)
		note := fmt.Sprintf("compare: the session start row (agentbox/base); image %d MB", img.Size>>20)
		if err := add(name, 10, note, func() error {
			s, err := rt.Start(ctx, c)
			if err != nil {
				return err
			}
			_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
			if cerr := s.Close(ctx); err == nil {
				err = cerr
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// imageBuildRows measures a cold build (no cache: apt fetches and installs
// every package from Debian's mirror) of each toolchain image FROM the
// base already on the engine, into a bench tag removed afterwards, and
// names the image's size and what it adds to the base. Once each: a build
// takes minutes and depends on the mirror.
func imageBuildRows(ctx context.Context, rt *docker.Runtime) ([]row, error) {
	cli := rt.Client()
	base, err := cli.ImageInspect(ctx, sandbox.DefaultImage)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, n := range sandbox.ImageNames {
		if n == "base" {
			continue
		}
		tag := "agentbox/" + n + ":bench"
		fmt.Fprintf(os.Stderr, "measuring a cold build of %s\n", sandbox.ImageRef(n))
		t0 := time.Now()
		id, err := images.Build(ctx, cli, n, images.Options{Progress: io.Discard, NoCache: true, Tag: tag})
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", n, err)
		}
		img, err := cli.ImageInspect(ctx, id)
		if _, rerr := cli.ImageRemove(ctx, tag, dockerimage.RemoveOptions{PruneChildren: true}); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{fmt.Sprintf("image build %s (cold, no cache)", n), 1, d, 0,
			fmt.Sprintf("FROM agentbox/base (%d MB): image %d MB, +%d MB", base.Size>>20, img.Size>>20, (img.Size-base.Size)>>20)})
	}
	return rows, nil
}
