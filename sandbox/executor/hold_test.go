package executor

import "testing"

// Two sweeps at once: the first one's release leaves the second one's
// processes held; the last release holds nothing.
func TestStopHoldCounted(t *testing.T) {
	var h stopHold
	h.hold([]int{10, 11})
	h.hold([]int{11, 12})
	h.release([]int{10, 11})
	if h.has(10) || !h.has(11) || !h.has(12) {
		t.Fatalf("after the first release: 10 %v, 11 %v, 12 %v; want only 11 and 12 held", h.has(10), h.has(11), h.has(12))
	}
	h.release([]int{11, 12})
	if h.has(11) || h.has(12) || len(h.pids) != 0 {
		t.Fatalf("after both releases: %v", h.pids)
	}
	var none *stopHold
	if none.has(1) {
		t.Fatal("a nil hold holds")
	}
}
