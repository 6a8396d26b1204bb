package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// TestServeCancelEndsOnlyTheExec: OpCancel for the running exec kills its
// tree (an escaped setsid child included) and the exec answers
// Interrupted; a stale cancel is ignored; the next exec runs.
func TestServeCancelEndsOnlyTheExec(t *testing.T) {
	s := hostServer(t)
	s.LoadJudge = nil
	h := serve(t, s, &wire.Request{})
	if r := h.recv(); r.Error != "" || !r.CanCancel {
		t.Fatalf("hello: %+v; want CanCancel", r)
	}
	h.send(&wire.Request{Op: wire.OpCancel, Target: 99}) // stale: no exec 99
	h.send(&wire.Request{Op: wire.OpExec, Command: "setsid sh -c 'sleep 2; echo late > late' & echo started; sleep 300", TimeoutMS: 600_000})
	exec := h.id
	h.send(&wire.Request{Op: wire.OpCancel, Target: exec})
	done := make(chan *wire.Response, 1)
	go func() { done <- h.recv() }()
	var resp *wire.Response
	select {
	case resp = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled exec did not answer")
	}
	if resp.ID != exec || !resp.Interrupted || resp.TimedOut {
		t.Fatalf("cancelled exec: %+v", resp)
	}
	h.send(&wire.Request{Op: wire.OpExec, Command: "sleep 3; echo next", TimeoutMS: 20_000})
	if r := h.recv(); r.Interrupted || string(r.Output) != "next\n" {
		t.Fatalf("the exec after the cancel: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(s.testRoot, "late")); err == nil {
		t.Error("the escaped child of the cancelled exec survived")
	}
	_ = h.w.Close()
}

// TestServeHostGoneMidExecKillsAtOnce: the host's end of stdin closes
// while a command runs (agentbox was SIGKILLed): Serve returns and the
// command's tree dies then, with no dead man's switch configured at all;
// on the code before, nothing happened until the switch (3 heartbeats)
// or the call timeout.
func TestServeHostGoneMidExecKillsAtOnce(t *testing.T) {
	s := hostServer(t)
	s.LoadJudge = nil
	h := serve(t, s, &wire.Request{}) // no DeadlineMS: only EOF can end it
	h.recv()
	h.send(&wire.Request{Op: wire.OpExec, Command: "setsid sh -c 'sleep 3; echo late > late' & sleep 3; echo late > late2", TimeoutMS: 600_000})
	_ = h.w.Close()
	select {
	case err := <-h.err:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return when the host went away mid-exec")
	}
	waitGone(t, s)
	for _, f := range []string{"late", "late2"} {
		if _, err := os.Stat(filepath.Join(s.testRoot, f)); err == nil {
			t.Fatalf("%s written after the host went away", f)
		}
	}
}
