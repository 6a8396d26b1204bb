package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/transfer"
	"github.com/agentbox/agentbox/sandbox/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// session is one pod. The protocol lives in the embedded wire.Client; this
// type supplies the attach stream, the kill, the workspace's way in and
// out, and the pod's life cycle.
type session struct {
	*wire.Client
	rt     *Runtime
	id     string
	name   string
	cfg    sandbox.Config
	info   sandbox.Info
	netpol bool               // a NetworkPolicy was created for it
	egress *wire.EgressDialer // network: proxy: serves the proxied connections

	stream *attachStream
	stderr *wire.TailBuffer
	cancel context.CancelFunc // ends the attach stream
	wg     sync.WaitGroup

	pmu     sync.Mutex // one pull at a time
	pullErr error      // sticky: the host copy misses changes

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // Close ran (CloseAll may run while Start does)
}

var (
	_ sandbox.Session = (*session)(nil)
	_ sandbox.Puller  = (*session)(nil)
)

func (s *session) ID() string         { return s.id }
func (s *session) Info() sandbox.Info { return s.info }

// connect attaches to the running pod, says hello, checks what the pod
// must prove, and copies the workspace in.
func (s *session) connect(ctx context.Context) error {
	s.stream = newAttachStream()
	s.stderr = &wire.TailBuffer{Max: 4096}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	run, err := s.rt.attach(actx, s.name, s.stream, s.stderr)
	if err != nil {
		return fmt.Errorf("%w: attaching to the sandbox pod: %w", sandbox.ErrUnavailable, err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.stream.end(run())
	}()
	t := wire.Transport{Stream: s.stream, Kill: s.kill, Explain: s.exitReason, Diag: s.stderr.String}
	if s.cfg.Network == sandbox.NetworkProxy {
		// Every connection the executor accepts on the in-pod proxy
		// address travels over this channel to the host-side proxy; the
		// pod has no other way out.
		s.egress = &wire.EgressDialer{Egress: s.cfg.Egress, Session: s.id}
		t.DialProxy = s.egress.Dial
	}
	s.Client = wire.NewClient(t)
	if err := s.HelloConfig(ctx, s.cfg, ""); err != nil {
		if wire.IsProtocolError(err) || strings.Contains(err.Error(), "bad ") {
			// An executor built from other code answers what this one
			// cannot read, or says it speaks another protocol.
			return fmt.Errorf("%w; the executor in image %s is not this agentbox's: rebuild the image with `agentbox image build --executor` (make image-k8s) and re-import it into the cluster (make k8s-up)", err, s.cfg.Image)
		}
		return err
	}
	if isolated(s.cfg.Network) {
		if err := s.rt.checkIsolated(s.Peer().Ifaces); err != nil {
			return err
		}
	}
	return s.copyIn(ctx)
}

// copyIn sends the workspace (less what files.read.deny matches: it is
// never in the sandbox at all) into the pod's /workspace.
func (s *session) copyIn(ctx context.Context) error {
	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() {
		_, err := transfer.PackTree(pw, s.cfg.Workspace, transfer.DenyMatcher(s.cfg.ReadDeny, nil), s.cfg.DiskBytes)
		pw.CloseWithError(err)
		packed <- err
	}()
	_, err := s.CopyIn(ctx, pr, s.cfg.DiskBytes)
	pr.CloseWithError(errors.New("copy ended"))
	perr := <-packed
	switch {
	case errors.Is(perr, transfer.ErrTooLarge):
		return fmt.Errorf("%w: the workspace holds more than sandbox.limits.disk (%d MiB), the bound of the pod's workspace; raise the limit or narrow the workspace", sandbox.ErrConfig, s.cfg.DiskBytes>>20)
	case perr != nil:
		return fmt.Errorf("%w: sending the workspace: %w", sandbox.ErrUnavailable, perr)
	}
	return err
}

// Pull brings what changed in the pod since the last pull back into the
// host-side copy, through an os.Root: changes to paths the file rules deny
// are dropped and reported. A failure is sticky: the copy misses changes.
func (s *session) Pull(ctx context.Context) (sandbox.PullReport, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.cfg.WorkspaceMode == sandbox.WorkspaceRO || s.Client == nil {
		return sandbox.PullReport{}, nil
	}
	if s.pullErr != nil {
		return sandbox.PullReport{}, s.pullErr
	}
	rep, err := s.pull(ctx)
	if err != nil {
		s.pullErr = fmt.Errorf("%w: %w", sandbox.ErrPull, err)
		return rep, s.pullErr
	}
	return rep, nil
}

func (s *session) pull(ctx context.Context) (sandbox.PullReport, error) {
	root, err := os.OpenRoot(s.cfg.Workspace)
	if err != nil {
		return sandbox.PullReport{}, err
	}
	defer root.Close()
	pr, pw := io.Pipe()
	type result struct {
		rep transfer.Report
		err error
	}
	applied := make(chan result, 1)
	go func() {
		rep, err := transfer.Apply(root, pr, transfer.ApplyOptions{Deny: transfer.DenyMatcher(s.cfg.ReadDeny, s.cfg.WriteDeny), MaxBytes: s.cfg.DiskBytes})
		if err != nil {
			pr.CloseWithError(err)
		} else {
			_, _ = io.Copy(io.Discard, pr)
		}
		applied <- result{rep, err}
	}()
	_, cerr := s.CopyOut(ctx, pw, s.cfg.DiskBytes)
	pw.CloseWithError(cerr)
	res := <-applied
	out := sandbox.PullReport{Entries: res.rep.Files + res.rep.Dirs + res.rep.Links + res.rep.Deleted, Bytes: res.rep.Bytes, Alarms: res.rep.Alarms}
	if res.err != nil {
		return out, res.err
	}
	return out, cerr
}

// kill deletes the pod at once (the client calls it when the channel can
// no longer be trusted).
func (s *session) kill(ctx context.Context) error {
	err := s.rt.cs.CoreV1().Pods(s.rt.opts.Namespace).Delete(ctx, s.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%w: deleting sandbox pod %s: %w; it stops itself within %s (its executor no longer hears from agentbox); agentbox's gc on this cluster removes it",
		sandbox.ErrUnavailable, s.name, err, (3 * s.cfg.Enforce.Heartbeat).Round(time.Second))
}

// exitReason explains a dead channel from the pod's state.
func (s *session) exitReason(error) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pod, err := s.rt.cs.CoreV1().Pods(s.rt.opts.Namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "the sandbox pod " + s.name + " was deleted (by someone else, or by the cluster)"
	}
	if err != nil {
		return ""
	}
	if pod.DeletionTimestamp != nil {
		return "the sandbox pod " + s.name + " is being deleted"
	}
	if pod.Status.Reason != "" {
		return fmt.Sprintf("the sandbox pod was stopped by the cluster (%s: %s)", pod.Status.Reason, pod.Status.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			if t.Reason == "OOMKilled" {
				return fmt.Sprintf("the executor was killed: out of memory (limit %d bytes)", s.cfg.MemoryBytes)
			}
			return fmt.Sprintf("the executor exited (exit code %d, %s)", t.ExitCode, t.Reason)
		}
	}
	return ""
}

// Close pulls the last changes back, then deletes the pod and its
// NetworkPolicy. It is safe to call more than once; a pull that failed
// (now or before) is its error, wrapping sandbox.ErrPull.
func (s *session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		ctx = context.WithoutCancel(ctx)
		var errs []error
		if s.Client != nil {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			if _, err := s.Pull(pctx); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
		errs = append(errs, s.destroy(ctx))
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// destroy deletes the pod and the NetworkPolicy and ends the stream.
func (s *session) destroy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := s.kill(ctx)
	if s.netpol {
		if nerr := s.rt.cs.NetworkingV1().NetworkPolicies(s.rt.opts.Namespace).Delete(ctx, podName(s.id), metav1.DeleteOptions{}); nerr != nil && !apierrors.IsNotFound(nerr) {
			err = errors.Join(err, fmt.Errorf("%w: deleting NetworkPolicy %s: %w; agentbox's gc on this cluster removes it", sandbox.ErrUnavailable, podName(s.id), nerr))
		}
	}
	if s.Client != nil {
		_ = s.Client.Close()
	}
	if s.egress != nil {
		s.egress.Wait()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.rt.untrack(s)
	return err
}

// isolated reports whether a network mode means the pod itself reaches
// nothing (none; proxy, whose egress goes over the executor's channel): a
// deny-all NetworkPolicy, and proof that it holds.
func isolated(n sandbox.NetworkMode) bool {
	return n == sandbox.NetworkNone || n == sandbox.NetworkProxy
}

// onlyLoopback reports whether a pod's interfaces are lo alone.
func onlyLoopback(ifaces []string) bool {
	return len(ifaces) > 0 && !slices.ContainsFunc(ifaces, func(n string) bool { return n != "lo" })
}

// checkIsolated refuses network: none in a pod with interfaces beyond lo
// unless the operator asserted that NetworkPolicy is enforced.
func (r *Runtime) checkIsolated(ifaces []string) error {
	if onlyLoopback(ifaces) || r.opts.NetpolEnforced {
		return nil
	}
	return fmt.Errorf("%w: network: none cannot be proven on this cluster: the sandbox pod has interfaces %v, and whether the network plugin enforces NetworkPolicy is unknown; if it does, set %s=1 (see agentbox's doctor for this cluster)", sandbox.ErrUnavailable, ifaces, EnvNetpolEnforced)
}
