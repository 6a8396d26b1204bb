package kubernetes

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gcPools removes the warm pools' ConfigMaps whose owner process is proven
// dead (as for pods, sandbox.GCReason on the owner annotations): the
// cluster's garbage collector then removes what they own (idle pods, the
// pools' NetworkPolicy), and the pods themselves went above by the same
// rule; another user's are left unless o.AllOwners.
func (r *Runtime) gcPools(ctx context.Context, o sandbox.GCOptions, now time.Time, removed []sandbox.Removed, errs []error) ([]sandbox.Removed, []error) {
	cms, err := r.cs.CoreV1().ConfigMaps(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelPoolOwner + "," + managedBy + "=agentbox"})
	if err != nil {
		return removed, append(errs, fmt.Errorf("%w: listing warm pool ConfigMaps: %w", sandbox.ErrUnavailable, err))
	}
	bg := metav1.DeletePropagationBackground
	for _, cm := range cms.Items {
		reason := sandbox.GCReason(cm.Annotations, true, cm.CreationTimestamp.Time, now)
		if reason == "" || !o.Covers(cm.Annotations) {
			continue
		}
		if err := r.cs.CoreV1().ConfigMaps(r.opts.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, sandbox.Removed{ID: cm.Name + " (ConfigMap)", Reason: reason})
	}
	return removed, errs
}
