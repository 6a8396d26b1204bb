package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// refuseEgress is the Egress of doctor's proxy check: it closes every
// connection (the check only needs the executor's start-up probe).
type refuseEgress struct{}

var _ sandbox.Egress = refuseEgress{}

func (refuseEgress) ServeEgress(_ context.Context, _ string, c net.Conn) { c.Close() }

// proxyRuntimes are the OCI runtimes doctor checks `network: proxy`
// under: the engine's default and runsc when the engine has it.
func proxyRuntimes(ctx context.Context, rt *docker.Runtime) []string {
	out := []string{""}
	if !rt.HonorsRuntime(ctx) {
		return out // sandbox.runtime is refused on such an engine
	}
	if cl := rt.Client(); cl != nil {
		if info, err := cl.Info(ctx); err == nil {
			var names []string
			for name := range info.Runtimes {
				if name == "runsc" {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			out = append(out, names...)
		}
	}
	return out
}

// checkProxy starts a `network: proxy` sandbox under runtime: the start
// fails (with the reason) when the executor cannot connect the mounted
// proxy socket, as under a gVisor runtime without --host-uds=open.
func checkProxy(ctx context.Context, rt *docker.Runtime, image, executor, runtime string) error {
	ws, err := os.MkdirTemp("", "agentbox-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := rt.Start(ctx, sandbox.Config{Image: image, Workspace: ws, ExecutorPath: executor, Runtime: runtime,
		Network: sandbox.NetworkProxy, Egress: refuseEgress{}})
	if err != nil {
		name := runtime
		if name == "" {
			name = "the default runtime"
		}
		return fmt.Errorf("network: proxy does not work under %s: %w", name, err)
	}
	return s.Close(context.WithoutCancel(ctx))
}
