package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// toolchainStarts measures session start in each of agentbox's toolchain
// images that is on the engine (the row names its size), against the base
// image's row above; an image not built is skipped (agentbox image build
// NAME; building is not measured here: it depends on Debian's mirror).
func toolchainStarts(ctx context.Context, rt *docker.Runtime, cfg sandbox.Config, add func(string, int, string, func() error) error) error {
	cli := rt.Client()
	for _, n := range sandbox.ImageNames {
		if n == "base" {
			continue
		}
		ref := sandbox.ImageRef(n)
		img, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			continue
		}
		c := cfg
		c.Image = ref
		name := fmt.Sprintf("session start in %s", ref)
		note := fmt.Sprintf("as the row above, image %d MB", img.Size>>20)
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
