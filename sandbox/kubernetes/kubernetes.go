// Package kubernetes is the sandbox.Runtime on a Kubernetes cluster
// (client-go): one hardened pod per session, whose only process is the
// executor baked into the image (agentbox image build --executor). The
// executor protocol (package sandbox/wire) runs over the API server's
// attach stream to the pod's stdin and stdout. Nothing is mounted from the
// host: the workspace is copied in over the same channel, and what the
// session changed is copied back into the host-side copy
// (sandbox.Config.Workspace) before the pod is deleted. `network: none` is
// a per-sandbox NetworkPolicy denying all traffic, proven by the pod
// having no interface but lo, or asserted by the operator
// (AGENTBOX_K8S_NETPOL_ENFORCED=1).
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// DefaultImage is the sandbox image on Kubernetes: the base image with the
// static agentbox binary at ExecutorPath (agentbox image build --executor).
const DefaultImage = "agentbox/k8s:latest"

// DefaultNamespace is where sandboxes run unless --namespace says otherwise.
const DefaultNamespace = "agentbox"

// ExecutorPath is where the image holds the executor (the agentbox binary).
const ExecutorPath = "/.agentbox/agentbox"

// EnvNetpolEnforced is the operator's assertion that the cluster's network
// plugin enforces NetworkPolicy, for clusters whose pods have interfaces
// beyond lo: without it `network: none` is refused there (fail closed).
const EnvNetpolEnforced = "AGENTBOX_K8S_NETPOL_ENFORCED"

// DefaultStartTimeout bounds a pod's way to Running (scheduling, image,
// container start); EnvStartTimeout overrides it.
const DefaultStartTimeout = 2 * time.Minute

// EnvStartTimeout is a duration that replaces DefaultStartTimeout.
const EnvStartTimeout = "AGENTBOX_K8S_START_TIMEOUT"

// DefaultHeartbeat is how often the host pings the executor; the executor
// kills every process after three silent intervals.
const DefaultHeartbeat = 2 * time.Second

// Options configure a Runtime.
type Options struct {
	Namespace string // "" = DefaultNamespace
	// NetpolEnforced asserts that NetworkPolicy is enforced (see
	// EnvNetpolEnforced); Connect reads the variable.
	NetpolEnforced bool
	StartTimeout   time.Duration // "" = DefaultStartTimeout
	// UsePool: sessions claim an idle pod from a warm pool of their shape
	// (kept by this process or any other) before they start a cold one.
	// Pool is how many idle pods this process keeps per shape (UsePool
	// implied when > 0).
	UsePool bool
	Pool    int
	// Notice, if set, receives one line per session start that used the
	// pool: StartWarm, or StartCold and why.
	Notice func(line string)
}

// Runtime is the sandbox.Runtime backed by a Kubernetes cluster.
type Runtime struct {
	cs    Clients
	rest  *rest.Config // nil: no attach (unit tests on fake clients)
	opts  Options
	owner map[string]string
	host  string

	// probe starts doctor's probe sandbox (nil: startProbe); a seam for
	// tests of the refusal on a cluster whose pods have interfaces.
	probe func(ctx context.Context, image string) (Probe, error)

	live  sandbox.Live[*session]
	pools *pools // Options.UsePool; nil: every pod is cold

	rcMu    sync.Mutex
	rcNames map[string]string // sandbox.runtime -> RuntimeClass (runtimeClass)
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a Runtime on clients (NewClients, or a fake); cfg is the
// REST configuration the attach stream needs (nil only in tests that
// never start a pod).
func New(cs Clients, cfg *rest.Config, o Options) *Runtime {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	r := &Runtime{cs: cs, rest: cfg, opts: o, owner: sandbox.OwnerLabels(), host: sandbox.Hostname()}
	if o.UsePool || o.Pool > 0 {
		r.pools = newPools(r, max(o.Pool, 0))
	}
	return r
}

// Connect loads the cluster configuration by the standard rules
// (KUBECONFIG, else ~/.kube/config, else in-cluster) and checks that the
// API server answers.
func Connect(ctx context.Context, o Options) (*Runtime, error) {
	quietKlog()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: no Kubernetes cluster configured (%v); set KUBECONFIG to a kubeconfig file (a local test cluster: make k8s-up)", sandbox.ErrUnavailable, err)
	}
	cfg.QPS, cfg.Burst = 50, 100 // a batch starts many pods at once
	// Protocol buffers, not JSON, for the built-in kinds: a pod is
	// encoded and decoded several times per claim, on both sides.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: Kubernetes client: %w", sandbox.ErrUnavailable, err)
	}
	if os.Getenv(EnvNetpolEnforced) == "1" {
		o.NetpolEnforced = true
	}
	if v := os.Getenv(EnvStartTimeout); v != "" && o.StartTimeout == 0 {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: %s=%q: want a duration such as 5m", sandbox.ErrConfig, EnvStartTimeout, v)
		}
		o.StartTimeout = d
	}
	rt := New(cs, cfg, o)
	if err := rt.ping(ctx); err != nil {
		return nil, err
	}
	return rt, nil
}

// ping checks that the API server answers.
func (r *Runtime) ping(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		_, err := r.cs.Discovery().ServerVersion()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: the Kubernetes API server does not answer (%v); check KUBECONFIG and that the cluster runs (a local test cluster: make k8s-up)", sandbox.ErrUnavailable, err)
		}
		return nil
	case <-time.After(15 * time.Second):
		return fmt.Errorf("%w: the Kubernetes API server did not answer in 15s; check KUBECONFIG and that the cluster runs", sandbox.ErrUnavailable)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", sandbox.ErrClosed, ctx.Err())
	}
}

// Namespace is where this runtime's sandboxes run.
func (r *Runtime) Namespace() string { return r.opts.Namespace }

func (r *Runtime) track(s *session)   { r.live.Add(s.id, s) }
func (r *Runtime) untrack(s *session) { r.live.Remove(s.id) }

// CloseAll closes every session this runtime started that is still open
// (its changes are pulled back first). The CLI calls it on SIGINT/SIGTERM.
func (r *Runtime) CloseAll(ctx context.Context) error { return r.live.CloseAll(ctx) }

// Close closes every open session, then stops the warm pools and removes
// their idle pods.
func (r *Runtime) Close(ctx context.Context) error {
	err := r.CloseAll(ctx)
	if r.pools != nil {
		err = errors.Join(err, r.pools.close(ctx))
	}
	return err
}

// quietKlog keeps client-go's own logging (klog: "Copying stdout failed"
// when a stream agentbox closed ends) off agentbox's stderr, unless
// AGENTBOX_DEBUG is set; agentbox reports what matters itself.
var quietKlog = sync.OnceFunc(func() {
	if os.Getenv("AGENTBOX_DEBUG") == "" {
		klog.SetLogger(logr.Discard())
	}
})
