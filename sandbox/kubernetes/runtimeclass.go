package kubernetes

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeClass is the RuntimeClass a pod of sandbox.runtime names: a
// RuntimeClass of that name, else the one whose handler it is (the policy
// says runsc, as on Docker; the cluster offers it as RuntimeClass gvisor,
// handler runsc). Cold and pool pods both run under it. Resolved once per
// name.
func (r *Runtime) runtimeClass(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	r.rcMu.Lock()
	defer r.rcMu.Unlock()
	if rc, ok := r.rcNames[name]; ok {
		return rc, nil
	}
	rcs := r.cs.NodeV1().RuntimeClasses()
	rc := name
	_, err := rcs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		list, lerr := rcs.List(ctx, metav1.ListOptions{})
		if lerr != nil {
			return "", fmt.Errorf("%w: listing RuntimeClasses: %w", sandbox.ErrUnavailable, lerr)
		}
		rc = ""
		for _, c := range list.Items {
			if c.Handler == name {
				rc = c.Name
			}
		}
		if rc == "" {
			return "", fmt.Errorf("%w: sandbox.runtime %q: the cluster has no RuntimeClass of that name or handler; install one (a local test cluster: make k8s-up installs gvisor, handler runsc, where runsc exists), or set sandbox.runtime: \"\"", sandbox.ErrUnavailable, name)
		}
	default:
		// Not allowed to read RuntimeClasses: the pod names it as said,
		// and the cluster's refusal says the rest.
		return name, nil
	}
	if r.rcNames == nil {
		r.rcNames = map[string]string{}
	}
	r.rcNames[name] = rc
	return rc, nil
}
