package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
	"github.com/urfave/cli/v2"
)

// backend is what the CLI needs of a sandbox backend: sessions through
// sandbox.Runtime, its capabilities, removal of sandboxes whose owner is
// gone, and closing every session it started.
type backend interface {
	sandbox.Runtime
	sandbox.Capable
	GC(ctx context.Context, o sandbox.GCOptions) (sandbox.GCResult, error)
	Close(ctx context.Context) error
}

var (
	_ backend = (*docker.Runtime)(nil)
	_ backend = (*kubernetes.Runtime)(nil)
)

// backendDef is one selectable backend: what it can do (known before
// connecting), how to connect, and its doctor. This table is the only
// place the CLI knows backends by name; everything else decides by
// capabilities and by the optional powers its Runtime has.
type backendDef struct {
	caps sandbox.Capabilities
	// buildsImages: its Runtime is a sandbox.ImageBuilder (it builds the
	// images its sandboxes run: a devcontainer's Dockerfile).
	buildsImages bool
	connect      func(c *cli.Context) (backend, error)
	doctor       func(c *cli.Context) error
}

var backends = map[string]backendDef{
	"docker": {caps: docker.Caps(), buildsImages: has[sandbox.ImageBuilder, *docker.Runtime](), doctor: doctorDocker,
		connect: func(c *cli.Context) (backend, error) { return docker.Connect(c.Context) }},
	"kubernetes": {caps: kubernetes.Caps(), buildsImages: has[sandbox.ImageBuilder, *kubernetes.Runtime](), doctor: doctorKubernetes,
		connect: func(c *cli.Context) (backend, error) {
			return kubernetes.Connect(c.Context, kubernetes.Options{Namespace: c.String("namespace"),
				UsePool: c.IsSet("pool"), Pool: c.Int("pool"), Notice: poolNotice(c)})
		}},
}

// backendFlags select the backend: run, exec, batch, mcp, gc and doctor
// take them. batch has its own --pool (tasks prepared ahead), which is
// also the Kubernetes pool size there: without names are left out.
func backendFlags(without ...string) []cli.Flag {
	all := []cli.Flag{
		&cli.StringFlag{Name: "backend", Usage: "docker | kubernetes (default: docker; kubernetes uses the cluster KUBECONFIG names)", EnvVars: []string{"AGENTBOX_BACKEND"}},
		&cli.StringFlag{Name: "namespace", Usage: "with --backend kubernetes: the namespace sandboxes run in", Value: kubernetes.DefaultNamespace, EnvVars: []string{"AGENTBOX_K8S_NAMESPACE"}},
		&cli.IntFlag{Name: "pool", Usage: "with --backend kubernetes (run, exec, mcp, batch): keep N idle hardened pods per sandbox shape while agentbox runs, and start sessions on an idle pod of any pool of their shape (0: keep none, only claim); a used pod is deleted, never reused", EnvVars: []string{"AGENTBOX_K8S_POOL"}},
	}
	out := all[:0]
	for _, f := range all {
		if !slices.Contains(without, f.Names()[0]) {
			out = append(out, f)
		}
	}
	return out
}

// chosenBackend is the backend --backend selects, checked.
func chosenBackend(c *cli.Context) (backendDef, error) {
	v := c.String("backend")
	switch v {
	case "":
		v = "docker"
	case "k8s":
		v = "kubernetes"
	}
	def, ok := backends[v]
	if !ok {
		return backendDef{}, usageError{fmt.Errorf("--backend %q: want docker or kubernetes", c.String("backend"))}
	}
	return def, nil
}

// capabilities of the chosen backend (an invalid --backend is reported by
// withRuntime: the default's).
func capabilities(c *cli.Context) sandbox.Capabilities {
	def, err := chosenBackend(c)
	if err != nil {
		return docker.Caps()
	}
	return def.caps
}

// has reports whether runtime type R has the optional power P (an
// interface), from its method set alone, before anything connects.
func has[P any, R sandbox.Runtime]() bool {
	var rt R
	_, ok := any(rt).(P)
	return ok
}

// buildsImages: the chosen backend builds the images its sandboxes run
// (an invalid --backend is reported by withRuntime: the default's).
func buildsImages(c *cli.Context) bool {
	def, err := chosenBackend(c)
	if err != nil {
		return backends["docker"].buildsImages
	}
	return def.buildsImages
}

// withRuntime connects to the backend, runs fn with it and guarantees that
// every sandbox it started is removed when fn returns, on an error, or on
// SIGINT/SIGTERM (when the workspace lives in the sandbox, after its
// changes came back).
func withRuntime(c *cli.Context, fn func(rt backend) error) error {
	def, err := chosenBackend(c)
	if err != nil {
		return err
	}
	rt, err := def.connect(c)
	if err != nil {
		return exitWith(errorExitCode(err), err)
	}
	defer func() { _ = rt.Close(context.WithoutCancel(c.Context)) }()
	return fn(rt)
}

// poolNotice prints how a session started with --pool (warm or cold, and
// why) on stderr, unless the output is for a machine or quiet.
func poolNotice(c *cli.Context) func(string) {
	if c.Bool("quiet") || c.Bool("json") || c.Bool("json-events") || c.Command.Name == "batch" {
		return nil
	}
	w := c.App.ErrWriter
	return func(line string) { fmt.Fprintln(w, line) }
}
