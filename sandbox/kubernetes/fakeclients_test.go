package kubernetes

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecorev1 "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	fakenetworkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1/fake"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	fakenodev1 "k8s.io/client-go/kubernetes/typed/node/v1/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeClients is Clients over an in-memory object tracker, built as
// client-go's fake clientset builds its (NewSimpleClientset) but with only
// the groups Clients has: the fake of every group would bring the typed
// clients of all of them back into this package's test build.
type fakeClients struct {
	k8stesting.Fake
	tracker k8stesting.ObjectTracker
	disc    *fakediscovery.FakeDiscovery
}

var _ Clients = (*fakeClients)(nil)

func newFake(objects ...runtime.Object) *fakeClients {
	o := k8stesting.NewObjectTracker(scheme.Scheme, serializer.NewCodecFactory(scheme.Scheme).UniversalDecoder())
	for _, obj := range objects {
		if err := o.Add(obj); err != nil {
			panic(err)
		}
	}
	cs := &fakeClients{tracker: o}
	cs.disc = &fakediscovery.FakeDiscovery{Fake: &cs.Fake}
	cs.AddReactor("*", "*", k8stesting.ObjectReaction(o))
	cs.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := o.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	return cs
}

func (c *fakeClients) Tracker() k8stesting.ObjectTracker { return c.tracker }

func (c *fakeClients) CoreV1() corev1client.CoreV1Interface {
	return &fakecorev1.FakeCoreV1{Fake: &c.Fake}
}

func (c *fakeClients) NetworkingV1() networkingv1client.NetworkingV1Interface {
	return &fakenetworkingv1.FakeNetworkingV1{Fake: &c.Fake}
}

func (c *fakeClients) NodeV1() nodev1client.NodeV1Interface {
	return &fakenodev1.FakeNodeV1{Fake: &c.Fake}
}

func (c *fakeClients) Discovery() discovery.DiscoveryInterface { return c.disc }
