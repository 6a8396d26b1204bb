package agent

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A turn's think is a duration within bounds; the model waits it out
// before the reply, and a cancelled context ends the wait with its cause.
func TestScriptThink(t *testing.T) {
	for _, bad := range []string{"-1s", "2m", "soon"} {
		if _, err := ParseScript("t", []byte("turns:\n  - {think: "+bad+", content: x}\n")); err == nil {
			t.Errorf("think %s accepted", bad)
		}
	}
	s, err := ParseScript("t", []byte("turns:\n  - {think: 20ms, content: a}\n  - {think: 50s, content: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Turns[0].Think != 20*time.Millisecond {
		t.Fatalf("think %v, want 20ms", s.Turns[0].Think)
	}
	m := NewScripted("t", s)
	t0 := time.Now()
	r, err := m.Complete(context.Background(), Request{})
	if err != nil || r.Message.Content != "a" || time.Since(t0) < 20*time.Millisecond {
		t.Fatalf("first turn: %+v, %v after %v; want a, after 20ms at least", r, err, time.Since(t0))
	}
	why := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, Request{})
		done <- err
	}()
	cancel(why)
	if err := <-done; !errors.Is(err, why) {
		t.Fatalf("a cancelled think: %v, want %v", err, why)
	}
}
