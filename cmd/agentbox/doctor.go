package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the engine, runtime, image, static binary and limits; say what is wrong and how to fix it",
		Flags: append(backendFlags(),
			&cli.StringFlag{Name: "image", Value: sandbox.DefaultImage, Usage: "sandbox image to check (kubernetes: " + kubernetes.DefaultImage + ")"},
			&cli.StringFlag{Name: "executor", Hidden: true, EnvVars: []string{"AGENTBOX_EXECUTOR"}},
		),
		Action: func(c *cli.Context) error {
			def, err := chosenBackend(c)
			if err != nil {
				return err
			}
			return def.doctor(c)
		},
	}
}

// doctorDocker checks the static binary, the engine, its runtimes and the
// image, the copies' store, a probe sandbox and the proxy socket.
func doctorDocker(c *cli.Context) error {
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
	rt, err := docker.Connect(c.Context)
	if err != nil {
		check("engine", err, "")
		return exitWith(exitUnavailable, fmt.Errorf("%d check(s) failed", bad))
	}
	defer rt.Close(context.WithoutCancel(c.Context))
	for _, ch := range rt.Doctor(c.Context, c.String("image")) {
		if ch.Note {
			fmt.Fprintf(w, "note  %-14s %s\n", ch.Name, ch.OK)
			continue
		}
		check(ch.Name, ch.Err, ch.OK)
	}
	fmt.Fprintf(w, "note  %-14s %s\n", "images", toolchainImages(c.Context, rt))
	if store, err := workspace.DefaultStore(os.Getenv); err == nil {
		copies, disk := workspace.Capabilities(store)
		fmt.Fprintf(w, "note  %-14s %s\n", "copies", copies)
		fmt.Fprintf(w, "note  %-14s copy mode and batch: %s\n", "disk bound", disk)
	}
	fmt.Fprintf(w, "note  %-14s rw mode: bounded the same way only when the policy sets sandbox.limits.disk (the staging layer then sits on the image; the default bounds copy mode and batch only); unbounded, an rw session can fill the disk the state directory is on\n", "disk bound")
	if bad == 0 {
		ws, _ := os.MkdirTemp("", "agentbox-doctor-")
		defer os.RemoveAll(ws)
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
		for _, name := range proxyRuntimes(c.Context, rt) {
			label := "proxy"
			if name != "" {
				label += "/" + name
			}
			check(label, checkProxy(c.Context, rt, c.String("image"), c.String("executor"), name), "the sandbox connects the host-side proxy socket")
		}
	}
	if bad > 0 {
		return exitWith(exitUnavailable, fmt.Errorf("%d check(s) failed", bad))
	}
	fmt.Fprintln(w, "all good")
	return nil
}

// toolchainImages says which of agentbox's images are on the engine and
// how to build the others.
func toolchainImages(ctx context.Context, rt *docker.Runtime) string {
	var have, missing []string
	for _, n := range sandbox.ImageNames {
		if rt.CheckImage(ctx, n) == nil {
			have = append(have, n)
		} else {
			missing = append(missing, n)
		}
	}
	s := "present: " + strings.Join(have, ", ")
	if len(have) == 0 {
		s = "present: none"
	}
	if len(missing) > 0 {
		s += "; missing: " + strings.Join(missing, ", ") + " (agentbox image build NAME; use with --image NAME)"
	}
	return s
}

// doctorKubernetes checks the cluster: API, namespace, image on the nodes,
// a probe sandbox, and whether network: none can be enforced.
func doctorKubernetes(c *cli.Context) error {
	w := c.App.Writer
	rt, err := kubernetes.Connect(c.Context, kubernetes.Options{Namespace: c.String("namespace")})
	if err != nil {
		fmt.Fprintf(w, "FAIL  %-14s %v\n", "api", err)
		return exitWith(exitUnavailable, errors.New("1 check(s) failed"))
	}
	defer rt.Close(context.WithoutCancel(c.Context))
	bad := 0
	for _, ch := range rt.Doctor(c.Context, c.String("image")) {
		switch {
		case ch.Note:
			fmt.Fprintf(w, "note  %-14s %s\n", ch.Name, ch.OK)
		case ch.Err != nil:
			bad++
			fmt.Fprintf(w, "FAIL  %-14s %v\n", ch.Name, ch.Err)
		default:
			fmt.Fprintf(w, "ok    %-14s %s\n", ch.Name, ch.OK)
		}
	}
	fmt.Fprintf(w, "note  %-14s on kubernetes file rules are applied to the copy (read-denied paths never enter the pod, write-denied changes never come back)\n", "limits")
	if bad > 0 {
		return exitWith(exitUnavailable, fmt.Errorf("%d check(s) failed", bad))
	}
	fmt.Fprintln(w, "all good")
	return nil
}
