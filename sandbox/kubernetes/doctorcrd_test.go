package kubernetes

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// doctor's agent-sandbox note, on a fake discovery: the CRDs' API groups
// found are named, a cluster without them says so, a discovery that fails
// is a note with the reason; it is never a failure.
func TestAgentSandboxCheck(t *testing.T) {
	withGroups := func(gvs ...string) *Runtime {
		cs := newFake()
		d := cs.Discovery().(*fakediscovery.FakeDiscovery)
		for _, gv := range gvs {
			d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gv})
		}
		return New(cs, nil, Options{})
	}
	for _, tc := range []struct {
		name    string
		rt      *Runtime
		want    []string
		notWant []string
	}{
		{"absent", withGroups("v1", "apps/v1", "networking.k8s.io/v1"),
			[]string{"are not installed", "agents.x-k8s.io"}, []string{"are installed"}},
		{"core", withGroups("v1", "agents.x-k8s.io/v1alpha1"),
			[]string{"are installed (API groups agents.x-k8s.io)", "SandboxWarmPool"}, []string{"extensions.agents"}},
		{"both", withGroups("agents.x-k8s.io/v1alpha1", "extensions.agents.x-k8s.io/v1alpha1", "v1"),
			[]string{"agents.x-k8s.io", "extensions.agents.x-k8s.io", "are installed"}, nil},
		{"lookalike", withGroups("agents.x-k8s.io.example.com/v1", "x-k8s.io/v1"),
			[]string{"are not installed"}, nil},
	} {
		c := tc.rt.agentSandboxCheck()
		if c.Name != "agent-sandbox" || !c.Note || c.Err != nil {
			t.Errorf("%s: %+v: want a note, never a failure", tc.name, c)
		}
		for _, w := range tc.want {
			if !strings.Contains(c.OK, w) {
				t.Errorf("%s: %q lacks %q", tc.name, c.OK, w)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(c.OK, w) {
				t.Errorf("%s: %q has %q", tc.name, c.OK, w)
			}
		}
	}
	cs := newFake()
	cs.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "group", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request\nmore")
	})
	c := New(cs, nil, Options{}).agentSandboxCheck()
	if !c.Note || c.Err != nil || !strings.Contains(c.OK, "could not list the API groups (the server is currently unable") || strings.Contains(c.OK, "\n") {
		t.Errorf("discovery failing: %+v", c)
	}
}
