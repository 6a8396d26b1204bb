package batch

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/hostcap"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
	"github.com/agentbox/agentbox/workspace"
)

// prepared is a task whose session is open: its workspace copy exists and
// its sandbox runs on it (or err says why not). Whoever holds a prepared
// owns its session and must hand it to runTask or discard.
type prepared struct {
	task *Task
	s    *session.Session
	slot *hostcap.Slot // of the host-wide cap, while the sandbox exists
	// setup are the devcontainer's lifecycle commands, the task's first
	// tool calls.
	setup []string
	err   error
}

// prepare opens the task's session: the copy of its workspace and the
// sandbox on it (session_start is written when the task runs). On failure
// nothing is left but the error.
func (b *batcher) prepare(ctx context.Context, t *Task) *prepared {
	p := &prepared{task: t}
	if err := ctx.Err(); err != nil {
		p.err = err
		return p
	}
	pol := b.policyOf(t)
	appr := b.cfg.Approver
	if appr == nil {
		appr = agent.DenyAll{DecidedBy: audit.DecidedByFlag}
	}
	// Exec-time asks: no terminal in a batch; --approve allow allows them.
	approve := func(context.Context, sandbox.ExecAsk) bool { return false }
	if _, ok := b.cfg.Approver.(agent.AllowAll); ok {
		approve = func(context.Context, sandbox.ExecAsk) bool { return true }
	}
	cfg, setup, err := TaskSandbox(pol, b.cfg.Sandbox, t)
	if err != nil {
		p.err = err
		return p
	}
	p.setup = setup
	s, err := session.Open(ctx, b.cfg.Runtime, session.Options{
		Policy: pol, Sandbox: cfg, Mode: sandbox.WorkspaceCopy,
		Audit: b.cfg.Audit, Approver: appr, ExecApprove: approve,
		Store: workspace.Store{Dir: b.work}, NoOverlay: b.cfg.NoOverlay, MaxCopyBytes: b.cfg.MaxCopyBytes,
		DiskBound: b.cfg.DiskInSandbox, TakeCopy: true, Lazy: true,
		Record: session.Record{Task: t.Task, TaskID: t.ID, Version: b.cfg.Version},
	})
	if err != nil {
		p.err = fmt.Errorf("preparing the task's session (workspace copy, enforcement, egress): %w", err)
		return p
	}
	p.s = s
	if err := b.startSandbox(ctx, p); err != nil {
		_, _ = s.Close(ctx, session.End{Status: agent.StatusError, Err: err})
		p.s = nil
		p.err = fmt.Errorf("starting the sandbox: %w", err)
		return p
	}
	return p
}

// remove deletes the task's workspace copy and frees its sandbox slot.
func (p *prepared) remove() {
	if p.s != nil {
		p.s.RemoveCopy()
	}
	p.slot.Release()
	p.slot = nil
}

// discard closes a prepared task that will not run: its sandbox and copy
// go, nothing is recorded.
func (b *batcher) discard(ctx context.Context, p *prepared) {
	if p.s != nil {
		_, _ = p.s.Close(ctx, session.End{Status: agent.StatusInterrupted})
	}
	p.remove()
}

// schedule runs the tasks on cfg.Concurrency workers and calls finish for
// every task that ended (not for tasks that were interrupted or never
// started). It returns when every worker and preparer has stopped and
// every container it started is closed.
//
// Without the pool each worker copies and starts its own task's sandbox.
// With it, PoolSize preparers copy and start the next tasks' sandboxes
// while the workers run the current ones; a prepared sandbox waits in the
// hand-off until a worker takes it.
func (b *batcher) schedule(ctx context.Context, tasks []*Task, finish func(Line)) {
	jobs := make(chan *Task)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for _, t := range tasks {
			select {
			case jobs <- t:
			case <-ctx.Done():
				return
			}
		}
	}()

	ready := make(chan *prepared)
	var preparers sync.WaitGroup
	n := b.poolSize()
	if b.cfg.NoPool {
		n = 1 // a pass-through: workers prepare their own tasks
	}
	for range n {
		preparers.Add(1)
		go func() {
			defer preparers.Done()
			for t := range jobs {
				if b.brk.blocks(t) || b.infra.tripped() != "" {
					continue // the endpoint or the engine keeps failing: not started
				}
				p := &prepared{task: t}
				if !b.cfg.NoPool {
					p = b.prepare(ctx, t)
				}
				select {
				case ready <- p:
				case <-ctx.Done():
					b.discard(ctx, p)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		preparers.Wait()
		close(ready)
	}()

	var workers sync.WaitGroup
	for range b.concurrency() {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for p := range ready {
				if ctx.Err() != nil || b.brk.blocks(p.task) || (p.s == nil && b.infra.tripped() != "") {
					b.discard(ctx, p)
					continue
				}
				if l, ok := b.runTask(ctx, p); ok {
					finish(l)
				}
			}
		}()
	}
	workers.Wait()
	wg.Wait()
}

// policyOf is the task's policy or the batch default.
func (b *batcher) policyOf(t *Task) *policy.Policy {
	if t.Policy != nil {
		return t.Policy
	}
	return b.cfg.Policy
}
