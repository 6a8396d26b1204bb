package workspacetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentbox/agentbox/workspace"
)

// The fake passes the contract suite like every real shape.
func TestFakeContract(t *testing.T) {
	Run(t, func(t *testing.T, src, _ string) workspace.Workspace { return NewFake(src) })
}

// The fake refuses lifecycle steps out of order and counts them.
func TestFakeOrder(t *testing.T) {
	f := NewFake(t.TempDir())
	ctx := context.Background()
	if _, err := f.AfterCall(ctx, "c1"); !errors.Is(err, ErrOrder) {
		t.Errorf("AfterCall before Begin: %v, want ErrOrder", err)
	}
	f.Begin()
	if err := f.Ready(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Finish(ctx, ""); !errors.Is(err, ErrOrder) {
		t.Errorf("Finish twice: %v, want ErrOrder", err)
	}
	if len(f.Misuse) != 2 {
		t.Errorf("misuse %v, want two steps", f.Misuse)
	}
}
