package batch

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/internal/hostcap"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// prepared is a task whose workspace copy exists and whose sandbox runs on
// it (or err says why not). Whoever holds a prepared owns its container and
// copy and must hand it to runTask or discard.
type prepared struct {
	task *Task
	cp   *workspace.Copy // the workspace copy
	sess sandbox.Session
	cfg  sandbox.Config
	slot *hostcap.Slot // of the host-wide cap, while the sandbox exists
	err  error
}

// prepare copies the task's workspace and starts its sandbox on the copy.
// On failure nothing is left but the error.
func (b *batcher) prepare(ctx context.Context, t *Task) *prepared {
	p := &prepared{task: t}
	if err := ctx.Err(); err != nil {
		p.err = err
		return p
	}
	pol := b.policyOf(t)
	id := sandbox.NewID()
	cp, err := workspace.NewCopy(workspace.Store{Dir: b.work}, t.Workspace, workspace.CopyOptions{
		Session: id, DiskBytes: pol.Sandbox.DiskBytes, DiskRequired: pol.Sandbox.DiskSet,
		NoOverlay: b.cfg.NoOverlay, MaxCopyBytes: b.cfg.MaxCopyBytes, BoundInSandbox: b.cfg.DiskInSandbox,
	})
	if err != nil {
		p.err = fmt.Errorf("copying the workspace: %w", err)
		return p
	}
	p.cp = cp
	p.cfg, err = agent.WithEgress(ctx, SandboxConfig(pol, b.cfg.Sandbox, t.Workspace), pol, b.cfg.Audit)
	if err != nil {
		_ = cp.Remove()
		p.cp = nil
		p.err = err
		return p
	}
	p.cfg.SessionID = id
	cp.Configure(&p.cfg)
	// Exec-time asks: no terminal in a batch; --approve allow allows them.
	var approve func(context.Context, sandbox.ExecAsk) bool
	if _, ok := b.cfg.Approver.(agent.AllowAll); ok {
		approve = func(context.Context, sandbox.ExecAsk) bool { return true }
	}
	en, err := agent.Enforcement(pol, approve)
	if err != nil {
		_ = cp.Remove()
		p.cp = nil
		p.err = err
		return p
	}
	p.cfg.Enforce = en
	sess, err := b.startSandbox(ctx, p)
	if err != nil {
		_ = cp.Remove()
		p.cp = nil
		p.err = fmt.Errorf("starting the sandbox: %w", err)
		return p
	}
	p.sess = sess
	return p
}

// remove deletes the task's workspace copy and frees its sandbox slot.
func (p *prepared) remove() {
	if p.cp != nil {
		_ = p.cp.Remove()
	}
	p.slot.Release()
	p.slot = nil
}

// discard closes a prepared task that will not run.
func (b *batcher) discard(ctx context.Context, p *prepared) {
	if p.sess != nil {
		_ = p.sess.Close(context.WithoutCancel(ctx))
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
				if ctx.Err() != nil || b.brk.blocks(p.task) || (p.sess == nil && b.infra.tripped() != "") {
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
