package session

import "context"

// state is where a session is in its life; it only moves forward.
type state uint8

const (
	stateCreated state = iota // Open or Wrap: the workspace is prepared, no sandbox yet
	stateStarted              // the sandbox runs (session_start may not be written yet)
	stateClosing              // Close began: nothing more runs
	stateClosed               // Close ended
)

func (s state) String() string {
	return [...]string{"created", "started", "closing", "closed"}[s]
}

// What a session acquires, each released by the cleanup registered when
// it was acquired.
const (
	resWorkspace = "workspace" // the session's Workspace (Close)
	resSandbox   = "sandbox"   // the sandbox the session started (sandbox.Session.Close)
)

// cleanups are the releases of what a session acquired, registered as it
// is acquired: the sandbox is closed in one place, by its cleanup.
type cleanups struct {
	list []cleanup
}

type cleanup struct {
	name string
	fn   func(ctx context.Context) error
}

// add registers the release of name (one per name: a new one replaces
// the old, which must have run).
func (c *cleanups) add(name string, fn func(ctx context.Context) error) {
	c.forget(name)
	c.list = append(c.list, cleanup{name, fn})
}

// release runs name's cleanup once and returns its error; nil when
// nothing of that name is held.
func (c *cleanups) release(ctx context.Context, name string) error {
	for i, r := range c.list {
		if r.name == name {
			c.list = append(c.list[:i:i], c.list[i+1:]...)
			return r.fn(ctx)
		}
	}
	return nil
}

// forget drops name's cleanup without running it: someone else releases
// it now (TakeCopy: the caller removes the copy).
func (c *cleanups) forget(name string) {
	for i, r := range c.list {
		if r.name == name {
			c.list = append(c.list[:i:i], c.list[i+1:]...)
			return
		}
	}
}

// releaseAll runs every cleanup left, the last acquired first.
func (c *cleanups) releaseAll(ctx context.Context) {
	for len(c.list) > 0 {
		r := c.list[len(c.list)-1]
		c.list = c.list[:len(c.list)-1]
		_ = r.fn(ctx)
	}
}
