package executor

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// host is the test's side of the protocol.
type host struct {
	t   *testing.T
	w   io.WriteCloser
	r   *bufio.Reader
	key []byte
	id  uint64
	err chan error
}

func serve(t *testing.T, s *Server, hello *wire.Request) *host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &host{t: t, w: inW, r: bufio.NewReader(outR), key: []byte("0123456789abcdef0123456789abcdef"), err: make(chan error, 1)}
	go func() { h.err <- s.Serve(inR, outW); outW.Close() }()
	hello.Op, hello.Key, hello.ID = wire.OpHello, h.key, 1
	h.id = 1
	if err := wire.WriteRequest(h.w, nil, hello); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) send(req *wire.Request) {
	h.id++
	req.ID = h.id
	if err := wire.WriteRequest(h.w, h.key, req); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) recv() *wire.Response {
	resp, err := wire.ReadResponse(h.r, h.key)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func hostServer(t *testing.T) *Server {
	s := testServer(t)
	s.LoadJudge = func(string, []byte) (Judge, error) { return denyJudge, nil }
	return s
}

func TestServeAskRoundTrip(t *testing.T) {
	for _, allow := range []bool{true, false} {
		s := hostServer(t)
		h := serve(t, s, &wire.Request{Policy: []byte("x"), Approver: true})
		if r := h.recv(); r.Error != "" {
			t.Fatal(r.Error)
		}
		h.send(&wire.Request{Op: wire.OpExec, Command: "mkdir ASKME asked; echo done", TimeoutMS: 20_000})
		exec := h.id
		ask := h.recv()
		if ask.ID != exec || ask.Ask == nil || ask.Ask.Argv[0] != "mkdir" {
			t.Fatalf("want an ask frame, got %+v", ask)
		}
		h.send(&wire.Request{Op: wire.OpPing})
		h.send(&wire.Request{Op: wire.OpAnswer, Answer: &wire.Answer{Seq: ask.Ask.Seq, Allow: allow}})
		resp := h.recv()
		if resp.ID != exec || resp.Ask != nil {
			t.Fatalf("final: %+v", resp)
		}
		_, err := os.Stat(filepath.Join(s.testRoot, "asked"))
		if ran := err == nil; ran != allow || (len(resp.Execs) == 0) == !allow {
			t.Fatalf("allow=%v: ran=%v, stopped %+v", allow, ran, resp.Execs)
		}
		h.w.Close()
		if err := <-h.err; err != nil {
			t.Fatal(err)
		}
	}
}

func TestServeRefusesPolicyItCannotLoad(t *testing.T) {
	s := testServer(t)
	h := serve(t, s, &wire.Request{Policy: []byte("version: 1")})
	if r := h.recv(); r.Error == "" {
		t.Fatal("hello with a policy accepted without a judge")
	}
	if err := <-h.err; err == nil {
		t.Fatal("Serve went on")
	}
}

// The dead man's switch: a host that falls silent mid-command has every
// process killed, and the command's later effect never happens.
func TestServeDeadManKillsEverything(t *testing.T) {
	s := hostServer(t)
	h := serve(t, s, &wire.Request{DeadlineMS: 300})
	h.recv()
	h.send(&wire.Request{Op: wire.OpExec, Command: "setsid sh -c 'sleep 3; echo late > late' & sleep 3; echo late > late2", TimeoutMS: 60_000})
	select {
	case err := <-h.err:
		if !errors.Is(err, ErrDeadMan) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the switch did not fire")
	}
	// Nothing of the command is alive, so nothing writes later.
	waitGone(t, s)
	for _, f := range []string{"late", "late2"} {
		if _, err := os.Stat(filepath.Join(s.testRoot, f)); err == nil {
			t.Fatalf("%s written after the switch fired", f)
		}
	}
}

func TestServeHeartbeatsKeepItAlive(t *testing.T) {
	s := hostServer(t)
	h := serve(t, s, &wire.Request{DeadlineMS: 400})
	h.recv()
	h.send(&wire.Request{Op: wire.OpExec, Command: "sleep 1; echo ok", TimeoutMS: 20_000})
	got := make(chan *wire.Response, 1)
	go func() { r, _ := wire.ReadResponse(h.r, h.key); got <- r }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-got:
			if r == nil || string(r.Output) != "ok\n" {
				t.Fatalf("%+v", r)
			}
			h.w.Close()
			<-h.err
			return
		case <-tick.C:
			h.send(&wire.Request{Op: wire.OpPing})
		}
	}
}

// waitGone polls until no live (non-zombie) descendant is left.
func waitGone(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		live := 0
		for pid := range s.sweepable() {
			if !zombie(pid) {
				live++
			}
		}
		if live == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes still alive: %v", live, s.sweepable())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
