package kubernetes

import (
	"fmt"

	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clients is the part of a Kubernetes clientset this backend uses: the
// core group (pods, config maps, quotas, namespaces, nodes), network
// policies, runtime classes and discovery. The full clientset
// (k8s.io/client-go/kubernetes.Interface) satisfies it; NewClients builds
// only these four, which keeps the typed clients of the other fifty API
// groups out of every binary that links this package (about a minute of
// a cold build on two cores).
type Clients interface {
	CoreV1() corev1client.CoreV1Interface
	NetworkingV1() networkingv1client.NetworkingV1Interface
	NodeV1() nodev1client.NodeV1Interface
	Discovery() discovery.DiscoveryInterface
}

type clients struct {
	core *corev1client.CoreV1Client
	net  *networkingv1client.NetworkingV1Client
	node *nodev1client.NodeV1Client
	disc *discovery.DiscoveryClient
}

var _ Clients = (*clients)(nil)

func (c *clients) CoreV1() corev1client.CoreV1Interface                   { return c.core }
func (c *clients) NetworkingV1() networkingv1client.NetworkingV1Interface { return c.net }
func (c *clients) NodeV1() nodev1client.NodeV1Interface                   { return c.node }
func (c *clients) Discovery() discovery.DiscoveryInterface                { return c.disc }

// NewClients builds the clients of Clients on one configuration, as
// kubernetes.NewForConfig does for all groups: one HTTP transport and one
// rate limiter (cfg.QPS, cfg.Burst) shared by all of them.
func NewClients(cfg *rest.Config) (Clients, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("the Kubernetes client's QPS %v needs a burst above 0", c.QPS)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	var cs clients
	if cs.core, err = corev1client.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.net, err = networkingv1client.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.node, err = nodev1client.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.disc, err = discovery.NewDiscoveryClientForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	return &cs, nil
}
