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
		slot, err := c.Acquire(ctx, func() {
			b.slots.waits.Add(1)
			b.prog.notice(fmt.Sprintf("task %s: waiting for a sandbox slot (the host runs at most %d at once; slots are shared round-robin between batches)", p.task.ID, c.N()))
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
