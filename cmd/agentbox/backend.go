package main

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
	"github.com/urfave/cli/v2"
)

// backend is what the CLI needs of a sandbox backend: sessions through
// sandbox.Runtime, removal of sandboxes whose owner is gone, and closing
// every session it started.
type backend interface {
	sandbox.Runtime
	GC(ctx context.Context) ([]sandbox.Removed, error)
	Close(ctx context.Context) error
}

var (
	_ backend = (*docker.Runtime)(nil)
	_ backend = (*kubernetes.Runtime)(nil)
)

// Backends.
const (
	backendDocker     = "docker"
	backendKubernetes = "kubernetes"
)

// backendFlags select the backend: run, exec, batch, mcp, gc and doctor
// take them.
func backendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "backend", Usage: "docker | kubernetes (default: docker; kubernetes uses the cluster KUBECONFIG names)", EnvVars: []string{"AGENTBOX_BACKEND"}},
		&cli.StringFlag{Name: "namespace", Usage: "with --backend kubernetes: the namespace sandboxes run in", Value: kubernetes.DefaultNamespace, EnvVars: []string{"AGENTBOX_K8S_NAMESPACE"}},
	}
}

// backendName is the chosen backend, checked.
func backendName(c *cli.Context) (string, error) {
	switch v := c.String("backend"); v {
	case "", backendDocker:
		return backendDocker, nil
	case backendKubernetes, "k8s":
		return backendKubernetes, nil
	default:
		return "", usageError{fmt.Errorf("--backend %q: want docker or kubernetes", v)}
	}
}

// onKubernetes reports whether the command runs on the Kubernetes backend
// (an invalid --backend is reported by withRuntime).
func onKubernetes(c *cli.Context) bool {
	name, err := backendName(c)
	return err == nil && name == backendKubernetes
}

// withRuntime connects to the backend, runs fn with it and guarantees that
// every sandbox it started is removed when fn returns, on an error, or on
// SIGINT/SIGTERM (on Kubernetes after its changes came back).
func withRuntime(c *cli.Context, fn func(rt backend) error) error {
	name, err := backendName(c)
	if err != nil {
		return err
	}
	var rt backend
	switch name {
	case backendKubernetes:
		rt, err = kubernetes.Connect(c.Context, kubernetes.Options{Namespace: c.String("namespace")})
	default:
		rt, err = docker.Connect(c.Context)
	}
	if err != nil {
		return exitWith(errorExitCode(err), err)
	}
	defer func() { _ = rt.Close(context.WithoutCancel(c.Context)) }()
	return fn(rt)
}
