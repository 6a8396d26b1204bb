package batch

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/agentbox/agentbox/internal/hostcap"
	"github.com/agentbox/agentbox/sandbox"
)

// slots is the batch's share of the host-wide sandbox cap: a task's
// sandbox holds a slot from before it starts until its workspace copy is
// removed (after the container). Nil cap: not capped.
type slots struct {
	cap     *hostcap.Cap
	waits   atomic.Int64 // times a sandbox had to wait for a slot
	waiting atomic.Int64 // sandboxes waiting now
	said    atomic.Bool  // the batch said it waits (once per batch)
}

// openSlots joins the host-wide cap (cfg.MaxSandboxes under cfg.SlotDir).
func (b *batcher) openSlots() error {
	b.slots = &slots{}
	if b.cfg.MaxSandboxes <= 0 {
		return nil
	}
	c, err := hostcap.New(b.cfg.SlotDir, b.cfg.MaxSandboxes, b.id)
	if err != nil {
		return fmt.Errorf("the host-wide sandbox cap: %w", err)
	}
	b.slots.cap = c
	return nil
}

// startSandbox takes a slot of the host-wide cap (waiting, and saying so,
// while the host runs as many sandboxes as it allows) and starts p's
// sandbox; the slot goes with p (released by remove).
func (b *batcher) startSandbox(ctx context.Context, p *prepared) error {
	if c := b.slots.cap; c != nil {
		b.slots.waiting.Add(1)
		slot, err := c.Acquire(ctx, func(ahead int) {
			b.slots.waits.Add(1)
			if b.slots.said.CompareAndSwap(false, true) {
				b.prog.notice(waitingNotice(c.N(), ahead))
			}
		})
		b.slots.waiting.Add(-1)
		if err != nil {
			return fmt.Errorf("%w: waiting for a sandbox slot: %w", sandbox.ErrClosed, err)
		}
		p.slot = slot
	}
	_, err := b.infra.start(ctx, func() (sandbox.Session, error) { return p.s.StartSandbox(ctx) })
	if err != nil {
		p.slot.Release()
		p.slot = nil
	}
	return err
}

// waitingNotice is said once per batch, the first time a task waits for a
// slot: the cap, where the batch is in the host's queue, and that its
// tasks start as slots free up (the metrics count every wait).
func waitingNotice(n, ahead int) string {
	where := "next in the host's queue"
	if ahead > 0 {
		where = fmt.Sprintf("%d ahead of it in the host's queue", ahead)
	}
	return fmt.Sprintf("waiting for a sandbox slot: the host runs at most %s at once and all are taken; this batch is %s (slots go round-robin between batches and sessions); its tasks start as slots free up", hostcap.Sandboxes(n), where)
}
