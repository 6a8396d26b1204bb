package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/agentbox/agentbox/internal/hostcap"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// cappedRuntime is a backend whose every sandbox holds a slot of the
// host-wide cap (internal/hostcap) from before it starts until it is
// closed: run, exec, mcp and fork take their share of the host's budget
// as batch does, queued round-robin with every other agentbox process.
type cappedRuntime struct {
	backend
	cap     *hostcap.Cap
	out     io.Writer // where waiting is said
	waits   atomic.Int64
	waiting atomic.Int64
	running atomic.Int64
}

// processCap is this process's share of the host-wide cap: the limit and
// slot directory batch uses (hostcap.Limit, hostcap.Dir).
func processCap() (*hostcap.Cap, error) {
	n, _, err := hostcap.Limit(os.Getenv, hostcap.HostFile)
	if err != nil {
		return nil, usageError{err}
	}
	dir, err := hostcap.Dir(os.Getenv)
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("the host-wide sandbox cap: %w", err))
	}
	c, err := hostcap.New(dir, n, "p"+strconv.Itoa(os.Getpid())+"-"+sandbox.NewID()[:8])
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("the host-wide sandbox cap: %w", err))
	}
	return c, nil
}

// withCappedRuntime is withRuntime with every sandbox under the host-wide
// cap.
func withCappedRuntime(c *cli.Context, fn func(rt *cappedRuntime) error) error {
	hc, err := processCap()
	if err != nil {
		return err
	}
	return withRuntime(c, func(rt backend) error {
		return fn(&cappedRuntime{backend: rt, cap: hc, out: c.App.ErrWriter})
	})
}

// Start takes a slot (waiting, and saying so once with the place in the
// host's queue) and starts the sandbox; the slot is freed when the
// sandbox is closed, or at once if it does not start.
func (r *cappedRuntime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	slot, err := r.acquire(ctx)
	if err != nil {
		return nil, err
	}
	s, err := r.backend.Start(ctx, cfg)
	if err != nil {
		slot.Release()
		return nil, err
	}
	r.running.Add(1)
	held := &slotSession{Session: s, release: func() { slot.Release(); r.running.Add(-1) }}
	if p, ok := s.(sandbox.Puller); ok {
		return &slotPuller{slotSession: held, p: p}, nil
	}
	return held, nil
}

// acquire takes a slot of the host-wide cap for one sandbox.
func (r *cappedRuntime) acquire(ctx context.Context) (*hostcap.Slot, error) {
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	slot, err := r.cap.Acquire(ctx, func(ahead int) {
		r.waits.Add(1)
		where := "next in the host's queue"
		if ahead > 0 {
			where = fmt.Sprintf("%d ahead in the host's queue", ahead)
		}
		fmt.Fprintf(r.out, "agentbox: waiting for a sandbox slot: the host runs at most %s at once and all are taken; %s (slots go round-robin between sessions and batches)\n", hostcap.Sandboxes(r.cap.N()), where)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: waiting for a sandbox slot: %w", sandbox.ErrClosed, err)
	}
	return slot, nil
}

// slotSession is a sandbox holding a slot: Close frees it.
type slotSession struct {
	sandbox.Session
	release func()
	closed  atomic.Bool
}

func (s *slotSession) Close(ctx context.Context) error {
	err := s.Session.Close(ctx)
	if s.closed.CompareAndSwap(false, true) {
		s.release()
	}
	return err
}

// Usage passes the sandbox's usage through (zero where it has none).
func (s *slotSession) Usage(ctx context.Context) (sandbox.Usage, error) {
	if u, ok := s.Session.(sandbox.UsageReporter); ok {
		return u.Usage(ctx)
	}
	return sandbox.Usage{}, nil
}

// slotPuller is a slotSession whose sandbox holds the workspace itself
// (sandbox.Puller: Kubernetes).
type slotPuller struct {
	*slotSession
	p sandbox.Puller
}

func (s *slotPuller) Pull(ctx context.Context) (sandbox.PullReport, error) { return s.p.Pull(ctx) }

// withSlot runs fn (a devcontainer image build: the engine runs its
// steps in containers) holding a slot of the host-wide cap.
func withSlot(ctx context.Context, out io.Writer, fn func() error) error {
	hc, err := processCap()
	if err != nil {
		return err
	}
	r := &cappedRuntime{cap: hc, out: out}
	slot, err := r.acquire(ctx)
	if err != nil {
		return err
	}
	defer slot.Release()
	return fn()
}
