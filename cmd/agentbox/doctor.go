package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/urfave/cli/v2"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the engine, runtime, image, static binary and limits; say what is wrong and how to fix it",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "image", Value: "agentbox/base:latest", Usage: "sandbox image to check"},
			&cli.StringFlag{Name: "executor", Hidden: true, EnvVars: []string{"AGENTBOX_EXECUTOR"}},
		},
		Action: func(c *cli.Context) error {
			w := c.App.Writer
			bad := 0
			check := func(name string, err error, okMsg string) {
				if err != nil {
					bad++
					fmt.Fprintf(w, "FAIL  %-14s %v\n", name, err)
					return
				}
				fmt.Fprintf(w, "ok    %-14s %s\n", name, okMsg)
			}
			exe, err := sandbox.ExecutorBinary(c.String("executor"))
			check("binary", err, exe+" is static")
			cl, err := docker.NewClient(c.Context)
			if err != nil {
				check("engine", err, "")
				return exitWith(exitUnavailable, fmt.Errorf("%d check(s) failed", bad))
			}
			defer cl.Close()
			v, err := cl.ServerVersion(c.Context)
			check("engine", err, fmt.Sprintf("Docker %s, API %s (client negotiated %s) at %s", v.Version, v.APIVersion, cl.ClientVersion(), cl.DaemonHost()))
			info, err := cl.Info(c.Context)
			if err == nil {
				check("runtime", nil, fmt.Sprintf("default %s; security options %v; cgroup v%s", info.DefaultRuntime, info.SecurityOptions, info.CgroupVersion))
				var missing []string
				for name, ok := range map[string]bool{"memory": info.MemoryLimit, "swap": info.SwapLimit, "pids": info.PidsLimit, "cpu quota": info.CPUCfsQuota} {
					if !ok {
						missing = append(missing, name)
					}
				}
				if len(missing) > 0 {
					sort.Strings(missing)
					check("limits", fmt.Errorf("the engine cannot enforce %s limits (cgroup support missing); sandboxes would refuse to start: enable the cgroup controllers for the engine", strings.Join(missing, ", ")), "")
				} else {
					check("limits", nil, "memory, swap, pids and CPU quota limits are enforced")
				}
				if os.Geteuid() == 0 {
					fmt.Fprintf(w, "note  %-14s running as root: sandboxes run as root with every capability dropped\n", "user")
				}
			}
			img, err := cl.ImageInspect(c.Context, c.String("image"))
			if err != nil {
				check("image", fmt.Errorf("%s missing; build it with `agentbox image build` (or make image)", c.String("image")), "")
			} else {
				check("image", nil, fmt.Sprintf("%s (%s, %d MB)", c.String("image"), img.ID[:19], img.Size>>20))
			}
			if err == nil && bad == 0 {
				ws, _ := os.MkdirTemp("", "agentbox-doctor-")
				defer os.RemoveAll(ws)
				rt := docker.New(cl)
				start := time.Now()
				err := func() error {
					ctx, cancel := context.WithTimeout(c.Context, 2*time.Minute)
					defer cancel()
					s, err := rt.Start(ctx, sandbox.Config{Image: c.String("image"), Workspace: ws, ExecutorPath: c.String("executor")})
					if err != nil {
						return err
					}
					defer s.Close(ctx)
					res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second})
					if err == nil && res.ExitCode != 0 {
						err = fmt.Errorf("`true` exited %d", res.ExitCode)
					}
					return err
				}()
				check("sandbox", err, fmt.Sprintf("started a hardened sandbox and ran a command in %s", time.Since(start).Round(time.Millisecond)))
			}
			if bad > 0 {
				return exitWith(exitUnavailable, fmt.Errorf("%d check(s) failed", bad))
			}
			fmt.Fprintln(w, "all good")
			return nil
		},
	}
}
