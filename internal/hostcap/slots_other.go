//go:build !unix

package hostcap

import "context"

// Cap is a no-op where flock(2) is missing: nothing is capped.
type Cap struct{ n int }

// Slot is a taken slot.
type Slot struct{}

// New is a cap that never waits.
func New(dir string, n int, owner string) (*Cap, error) { return &Cap{n: n}, nil }

// N is the number of slots.
func (c *Cap) N() int { return c.n }

// Acquire returns at once.
func (c *Cap) Acquire(ctx context.Context, waiting func(ahead int)) (*Slot, error) {
	return &Slot{}, ctx.Err()
}

// Release does nothing.
func (s *Slot) Release() {}
