package kubernetes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Check is one finding of `agentbox doctor --backend kubernetes`: Err says
// what is wrong and how to fix it; else OK says what was found. A Note is
// informational.
type Check struct {
	Name string
	Err  error
	OK   string
	Note bool
}

// Probe is what a probe sandbox reports: its interfaces, and how long it
// took to start and run one command.
type Probe struct {
	Ifaces []string
	Took   time.Duration
}

// Doctor checks the API server, the namespace, the image on the nodes, and
// starts a probe sandbox: its interfaces tell whether network: none is
// enforced by the network plugin (only lo: no traffic can leave) or only
// by NetworkPolicy, which agentbox cannot see enforced.
func (r *Runtime) Doctor(ctx context.Context, image string) []Check {
	if image == "" || image == sandbox.DefaultImage {
		image = DefaultImage
	}
	var out []Check
	v, err := r.cs.Discovery().ServerVersion()
	if err != nil {
		return append(out, Check{Name: "api", Err: fmt.Errorf("the API server does not answer (%v); check KUBECONFIG", err)})
	}
	out = append(out, Check{Name: "api", OK: "Kubernetes " + v.GitVersion + " answers"})
	if _, err := r.cs.CoreV1().Namespaces().Get(ctx, r.opts.Namespace, metav1.GetOptions{}); err != nil {
		return append(out, Check{Name: "namespace", Err: fmt.Errorf("namespace %s: %v; create it (kubectl create namespace %s) or choose another namespace", r.opts.Namespace, err, r.opts.Namespace)})
	}
	out = append(out, Check{Name: "namespace", OK: r.opts.Namespace})
	out = append(out, r.agentSandboxCheck())
	out = append(out, r.imageCheck(ctx, image))
	probe := r.probe
	if probe == nil {
		probe = r.startProbe
	}
	p, err := probe(ctx, image)
	if err != nil {
		return append(out, Check{Name: "sandbox", Err: err})
	}
	out = append(out, Check{Name: "sandbox", OK: fmt.Sprintf("started a hardened pod and ran a command in %s", p.Took.Round(time.Millisecond))})
	return append(out, netpolCheck(p.Ifaces, r.opts.NetpolEnforced))
}

// netpolCheck decides whether network: none can run on this cluster.
func netpolCheck(ifaces []string, asserted bool) Check {
	switch {
	case onlyLoopback(ifaces):
		return Check{Name: "network none", OK: "pods get only lo: no traffic can leave a sandbox, whatever NetworkPolicy does"}
	case asserted:
		return Check{Name: "network none", OK: fmt.Sprintf("pods get %v; %s=1 asserts that the network plugin enforces NetworkPolicy (agentbox cannot check it)", ifaces, EnvNetpolEnforced)}
	}
	return Check{Name: "network none", Err: fmt.Errorf("pods get %v and agentbox cannot know whether the network plugin enforces NetworkPolicy, so network: none is refused; if it does, set %s=1", ifaces, EnvNetpolEnforced)}
}

// imageCheck looks for the image among the nodes' images (when the nodes
// can be read at all).
func (r *Runtime) imageCheck(ctx context.Context, image string) Check {
	nodes, err := r.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Check{Name: "image", Note: true, OK: fmt.Sprintf("cannot list the nodes (%v): whether %s is there shows when a sandbox starts", err, image)}
	}
	var have []string
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if sameImage(name, image) {
					have = append(have, n.Name)
				}
			}
		}
	}
	if len(have) == 0 {
		return Check{Name: "image", Err: fmt.Errorf("%s is on none of the %d node(s); build it with `agentbox image build --executor` and import it into the cluster (a local test cluster: make k8s-up)", image, len(nodes.Items))}
	}
	return Check{Name: "image", OK: fmt.Sprintf("%s on node(s) %s", image, strings.Join(have, ", "))}
}

// sameImage compares image references as the runtime names them
// ("docker.io/agentbox/k8s:latest" is "agentbox/k8s:latest").
func sameImage(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimPrefix(s, "docker.io/")
		s = strings.TrimPrefix(s, "library/")
		if !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") && !strings.Contains(s, "@") {
			s += ":latest"
		}
		return s
	}
	return norm(a) == norm(b)
}

// startProbe starts a sandbox on an empty read-only workspace with the
// cluster's own network (no NetworkPolicy: the interfaces are the
// question) and runs one command.
func (r *Runtime) startProbe(ctx context.Context, image string) (Probe, error) {
	ws, err := os.MkdirTemp("", "agentbox-doctor-")
	if err != nil {
		return Probe{}, err
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	sess, err := r.Start(ctx, sandbox.Config{Image: image, Workspace: ws, WorkspaceMode: sandbox.WorkspaceRO, Network: sandbox.NetworkOpen})
	if err != nil {
		return Probe{}, err
	}
	defer sess.Close(ctx)
	res, err := sess.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 30 * time.Second})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("`true` exited %d in the probe sandbox", res.ExitCode)
	}
	if err != nil {
		return Probe{}, err
	}
	return Probe{Ifaces: sess.(*session).Peer().Ifaces, Took: time.Since(start)}, nil
}
