package kubernetes

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gc removes the pods (and NetworkPolicies) of dead owners, never those of
// live ones, unprovable ones, or pods that are not agentbox's.
func TestGCOnFakeCluster(t *testing.T) {
	me := sandbox.OwnerLabels()
	dead := maps.Clone(me)
	dead[sandbox.LabelOwner] = "999999999:1"
	otherUser := maps.Clone(dead)
	otherUser[sandbox.LabelOwnerUID] = "4242"
	otherBoot := maps.Clone(me)
	otherBoot[sandbox.LabelOwnerBoot] = "another-boot"
	mk := func(name string, ann map[string]string, phase corev1.PodPhase, labelled bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agentbox", Annotations: ann, CreationTimestamp: metav1.Now()}, Status: corev1.PodStatus{Phase: phase}}
		if labelled {
			p.Labels = map[string]string{sandbox.LabelSession: name}
		}
		return p
	}
	np := func(name string, ann map[string]string) *netv1.NetworkPolicy {
		return &netv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agentbox", Annotations: ann, Labels: map[string]string{sandbox.LabelSession: name}, CreationTimestamp: metav1.Now()}}
	}
	cs := newFake(
		mk("dead", dead, corev1.PodRunning, true), np("dead", dead),
		mk("live", me, corev1.PodRunning, true), np("live", me),
		mk("elsewhere-running", otherBoot, corev1.PodRunning, true),
		mk("elsewhere-done", otherBoot, corev1.PodSucceeded, true),
		mk("not-ours", dead, corev1.PodRunning, false),
		np("orphan-policy", dead), np("starting-policy", me),
		mk("other-user", otherUser, corev1.PodRunning, true), np("other-user", otherUser),
	)
	rt := New(cs, nil, Options{})
	res, err := rt.GC(context.Background(), sandbox.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Others != 1 {
		t.Errorf("gc saw %d orphans of other users, want 1 (other-user)", res.Others)
	}
	var got []string
	for _, r := range res.Removed {
		got = append(got, r.ID)
	}
	slices.Sort(got)
	want := []string{"dead", "elsewhere-done", "orphan-policy (NetworkPolicy)"}
	if !slices.Equal(got, want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	pods, _ := cs.CoreV1().Pods("agentbox").List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"elsewhere-running", "live", "not-ours", "other-user"}) {
		t.Fatalf("pods left %v", left)
	}
	pols, _ := cs.NetworkingV1().NetworkPolicies("agentbox").List(context.Background(), metav1.ListOptions{})
	var lp []string
	for _, p := range pols.Items {
		lp = append(lp, p.Name)
	}
	slices.Sort(lp)
	if !slices.Equal(lp, []string{"live", "other-user", "starting-policy"}) {
		t.Fatalf("policies left %v", lp)
	}
	// --all-owners (root): the other user's orphan goes too.
	res, err = rt.GC(context.Background(), sandbox.GCOptions{AllOwners: true})
	if err != nil || len(res.Removed) != 1 || res.Removed[0].ID != "other-user" || res.Others != 0 {
		t.Fatalf("gc --all-owners: %+v %v, want other-user removed", res, err)
	}
}
