package docker

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

func TestGCReason(t *testing.T) {
	now := time.Now()
	me := OwnerLabels()
	with := func(mod func(l map[string]string)) map[string]string {
		l := map[string]string{}
		for k, v := range me {
			l[k] = v
		}
		mod(l)
		return l
	}
	recent, old := now.Add(-time.Hour).Unix(), now.Add(-GCAgeBound-2*time.Hour).Unix()
	cases := []struct {
		name    string
		labels  map[string]string
		state   string
		created int64
		remove  bool
	}{
		{"own live process", me, "running", recent, false},
		{"own live process, ancient", me, "running", old, false},
		{"same namespace, process gone", with(func(l map[string]string) { l[LabelOwner] = "999999999:1" }), "running", recent, true},
		{"same namespace, pid reused", with(func(l map[string]string) { l[LabelOwner] = strconv.Itoa(os.Getpid()) + ":1" }), "running", recent, true},
		{"another pid namespace", with(func(l map[string]string) { l[LabelOwnerNS] = "1"; l[LabelOwner] = "999999999:1" }), "running", recent, false},
		{"another pid namespace, past the age bound", with(func(l map[string]string) { l[LabelOwnerNS] = "1" }), "running", old, true},
		{"another pid namespace, within timeout + bound", with(func(l map[string]string) { l[LabelOwnerNS] = "1"; l[LabelTimeout] = "86400" }), "running", old, false},
		{"another boot, running (another machine)", with(func(l map[string]string) { l[LabelOwnerBoot] = "x" }), "running", recent, false},
		{"another boot, created (starting elsewhere)", with(func(l map[string]string) { l[LabelOwnerBoot] = "x" }), "created", recent, false},
		{"another boot, exited", with(func(l map[string]string) { l[LabelOwnerBoot] = "x" }), "exited", recent, true},
		{"old label", map[string]string{LabelOwner: "999999999:1"}, "running", recent, false},
		{"old label, past the age bound", map[string]string{LabelOwner: "999999999:1"}, "running", old, true},
		{"no label", map[string]string{}, "running", recent, false},
	}
	for _, c := range cases {
		got := gcReason(container.Summary{Labels: c.labels, State: c.state, Created: c.created}, now)
		if (got != "") != c.remove {
			t.Errorf("%s: reason %q, want remove=%v", c.name, got, c.remove)
		}
	}
}
