package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// tierRows measures session start and the warm call under gVisor (runsc),
// in the same run as the runc rows, when the engine has runsc.
func tierRows(ctx context.Context, rt *docker.Runtime, cfg sandbox.Config, calls int, add func(string, int, string, func() error) error) error {
	info, err := rt.Client().Info(ctx)
	if err != nil {
		return err
	}
	if _, ok := info.Runtimes[docker.GVisorRuntime]; !ok {
		fmt.Fprintln(os.Stderr, "runsc is not registered with the engine: no gVisor rows")
		return nil
	}
	cfg.Runtime = docker.GVisorRuntime
	s, err := rt.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	if err := add("gVisor (runsc): warm call `true` through the executor", calls, "compare: the runc warm call above", func() error {
		r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
		if err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("exit %d", r.ExitCode)
		}
		return err
	}); err != nil {
		return err
	}
	return add("gVisor (runsc): session start, create to first answer", 15, "compare: the runc session start above", func() error {
		s, err := rt.Start(ctx, cfg)
		if err != nil {
			return err
		}
		_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
		if cerr := s.Close(ctx); err == nil {
			err = cerr
		}
		return err
	})
}
