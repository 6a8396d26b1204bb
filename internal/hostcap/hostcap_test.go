//go:build unix

package hostcap

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRoundRobin: with every slot taken by A, B queues first and gets the
// next free slot before A's own later request; a dead waiter's ticket
// does not block anyone nor count as ahead; each waiter is told how many
// are ahead of it.
func TestRoundRobin(t *testing.T) {
	dir := t.TempDir()
	a, _ := New(dir, 2, "aaaa")
	b, _ := New(dir, 2, "bbbb")
	ctx := context.Background()
	a1, err := a.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := a.Acquire(ctx, nil)
	// A dead waiter: a ticket nobody holds locked, queued first.
	if err := os.WriteFile(filepath.Join(dir, "queue", "00000000000000000001-dead"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	bWaits := make(chan struct{})
	var bAhead, aAhead int
	go func() {
		s, err := b.Acquire(ctx, func(n int) { bAhead = n; close(bWaits) })
		if err == nil {
			got <- "b"
			t.Cleanup(s.Release)
		}
	}()
	<-bWaits
	aWaits := make(chan struct{})
	go func() {
		s, err := a.Acquire(ctx, func(n int) { aAhead = n; close(aWaits) })
		if err == nil {
			got <- "a"
			t.Cleanup(s.Release)
		}
	}()
	<-aWaits
	if bAhead != 0 || aAhead != 1 {
		t.Errorf("waiters ahead: b saw %d (want 0: the dead ticket does not count), a saw %d (want 1: b)", bAhead, aAhead)
	}
	select {
	case w := <-got:
		t.Fatalf("%s got a slot while all were taken", w)
	case <-time.After(3 * poll):
	}
	a1.Release()
	if w := <-got; w != "b" {
		t.Fatalf("first freed slot went to %s, want b (queued first)", w)
	}
	a2.Release()
	if w := <-got; w != "a" {
		t.Fatalf("second freed slot went to %s, want a", w)
	}
}

// TestAcquireCancelled: a waiter whose context ends leaves the queue.
func TestAcquireCancelled(t *testing.T) {
	dir := t.TempDir()
	c, _ := New(dir, 1, "cccc")
	s, _ := c.Acquire(context.Background(), nil)
	defer s.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*poll)
	defer cancel()
	if _, err := c.Acquire(ctx, nil); err == nil {
		t.Fatal("acquired a slot that was taken")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "queue")); len(ents) != 0 {
		t.Errorf("ticket left in the queue: %v", ents)
	}
}

func TestLimit(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host.conf")
	if err := os.WriteFile(host, []byte("# operator\nmax_sandboxes: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, c := range []struct {
		env  string
		file string
		want int
	}{{"", host, 3}, {"2", host, 2}, {"8", host, 3}, {"8", "", 8}} {
		n, _, err := Limit(env(c.env), c.file)
		if err != nil || n != c.want {
			t.Errorf("env %q file %q: %d %v, want %d", c.env, c.file, n, err, c.want)
		}
	}
	if _, _, err := Limit(env("zero"), ""); err == nil {
		t.Error("a bad AGENTBOX_MAX_SANDBOXES was accepted")
	}
}

func TestSandboxesInWords(t *testing.T) {
	if got := Sandboxes(1); got != "1 sandbox" {
		t.Errorf("Sandboxes(1) = %q", got)
	}
	if got := Sandboxes(2); got != "2 sandboxes" {
		t.Errorf("Sandboxes(2) = %q", got)
	}
}
