//go:build unix

package hostcap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// poll is how often a waiting owner looks for a free slot.
const poll = 50 * time.Millisecond

// Cap hands out the host's slots to one owner (a batch); its Acquire is
// safe for concurrent use and serves the owner's callers one at a time.
type Cap struct {
	dir, queue string
	n          int
	owner      string
	mu         sync.Mutex
}

// Slot is one taken slot; Release frees it (exiting frees it too).
type Slot struct {
	f    *os.File
	once sync.Once
}

// New is the cap of n slots under dir for owner (a name unique on the
// host, e.g. a batch id).
func New(dir string, n int, owner string) (*Cap, error) {
	if n < 1 {
		return nil, fmt.Errorf("hostcap: %d slots", n)
	}
	q := filepath.Join(dir, "queue")
	if err := os.MkdirAll(q, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", q, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode()&os.ModeSticky != 0 {
		_ = os.Chmod(q, 0o777|os.ModeSticky) // shared between users like dir
	}
	return &Cap{dir: dir, queue: q, n: n, owner: owner}, nil
}

// N is the number of slots.
func (c *Cap) N() int { return c.n }

// Acquire takes a slot, waiting while all are taken or another owner
// queued first; waiting is called once when it has to wait, with how many
// live waiters of other owners queued before it. It returns ctx's error if
// ctx ends first.
func (c *Cap) Acquire(ctx context.Context, waiting func(ahead int)) (*Slot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ticket *ticket
	defer func() {
		if ticket != nil {
			_ = os.Remove(ticket.name)
			ticket.f.Close()
		}
	}()
	for {
		if c.first(ticket) {
			if s := c.tryTake(); s != nil {
				return s, nil
			}
		}
		if ticket == nil {
			t, err := c.enqueue()
			if err != nil {
				return nil, err
			}
			ticket = t
			if waiting != nil {
				waiting(c.ahead(ticket))
			}
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// Release frees the slot.
func (s *Slot) Release() {
	if s == nil {
		return
	}
	s.once.Do(func() { s.f.Close() }) // closing drops the flock
}

// tryTake locks the first free slot file, or returns nil.
func (c *Cap) tryTake() *Slot {
	for i := range c.n {
		p := filepath.Join(c.dir, "slot-"+strconv.Itoa(i))
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o666)
		if err != nil {
			continue
		}
		_ = f.Chmod(0o666) // other users lock it too (umask)
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return &Slot{f: f}
		}
		f.Close()
	}
	return nil
}

// enqueue makes this owner's ticket: a file named by the time it queued,
// locked before it appears in the queue, so that a ticket nobody holds
// locked belongs to a dead waiter.
// ticket is a queued wait: the locked file and its name in the queue.
type ticket struct {
	f    *os.File
	name string
}

func (c *Cap) enqueue() (*ticket, error) {
	name := fmt.Sprintf("%020d-%s", time.Now().UnixNano(), c.owner)
	tmp := filepath.Join(c.dir, ".ticket-"+c.owner+"-"+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_RDONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("queueing for a sandbox slot: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("queueing for a sandbox slot: %w", err)
	}
	final := filepath.Join(c.queue, name)
	if err := os.Rename(tmp, final); err != nil {
		f.Close()
		return nil, fmt.Errorf("queueing for a sandbox slot: %w", err)
	}
	return &ticket{f: f, name: final}, nil
}

// first reports whether no live waiter queued before ticket (nil: before
// now). Tickets of dead waiters are removed on the way.
func (c *Cap) first(t *ticket) bool { return c.count(t, true) == 0 }

// ahead is how many live waiters of other owners queued before ticket.
func (c *Cap) ahead(t *ticket) int { return c.count(t, false) }

// count counts the live waiters of other owners queued before ticket (nil:
// before now), stopping at the first when one is enough.
func (c *Cap) count(t *ticket, one bool) int {
	ents, err := os.ReadDir(c.queue)
	if err != nil {
		return 0
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	mine := ""
	if t != nil {
		mine = filepath.Base(t.name)
	}
	live := 0
	for _, n := range names {
		if n == mine {
			break
		}
		if strings.HasSuffix(n, "-"+c.owner) {
			continue // a ticket of this owner's earlier wait, being removed
		}
		if c.alive(filepath.Join(c.queue, n)) {
			live++
			if one {
				break
			}
		}
	}
	return live
}

// alive reports whether the ticket at p is held by a live waiter; a dead
// waiter's ticket is removed.
func (c *Cap) alive(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission)
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return true
	}
	_ = os.Remove(p) // nobody holds it: its waiter is gone
	return false
}
