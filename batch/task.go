package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentbox/agentbox/workspace"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
)

// Exit codes of a task, as `agentbox run` would exit (session.ExitCode).
const (
	exitFailed      = session.ExitFailed
	exitUnavailable = session.ExitUnavailable
	exitInterrupted = session.ExitInterrupted
)

// maxLogBytes caps the log excerpt kept per task.
const maxLogBytes = 1 << 20

// runTask runs one prepared task (preparing it first without the pool),
// exports its changes and appends its results line. It reports false when
// the task was interrupted: it gets no line and --resume runs it again.
// The task's container and workspace copy are gone when it returns.
func (b *batcher) runTask(ctx context.Context, p *prepared) (Line, bool) {
	t := p.task
	picked := time.Now()
	b.prog.started(t)
	if b.cfg.Events != nil {
		b.cfg.Events.TaskStarted(t)
	}
	if p.s == nil && p.err == nil {
		p = b.prepare(ctx, t)
	}
	l := Line{ID: t.ID, Started: picked.UTC(), FilesChanged: []audit.FileChange{}}
	l.WaitMS = time.Since(picked).Milliseconds()
	outDir := filepath.Join(b.cfg.Output, t.ID)
	_ = workspace.RemoveTree(outDir) // a partial output of an interrupted run
	if err := os.MkdirAll(outDir, 0o755); err != nil && p.err == nil {
		p.err = fmt.Errorf("creating the task's output directory: %w", err)
	}
	if p.err != nil {
		b.discard(ctx, p)
		if ctx.Err() != nil || errors.Is(p.err, ErrInfraStopped) {
			_ = workspace.RemoveTree(outDir)
			return l, false
		}
		l.Status, l.Exit, l.Error = StatusSetupFailed, exitUnavailable, b.cfg.Audit.Redact(p.err.Error())
		if errors.Is(p.err, sandbox.ErrConfig) {
			l.Exit = session.ErrorExitCode(p.err) // the exit-code table's one mapping: 2
		} else if errors.Is(p.err, workspace.ErrTooLarge) {
			l.Exit = exitFailed
		} else if isInfra(p.err) {
			l.Status = StatusInfraFailed
		}
		l.DurationMS = time.Since(picked).Milliseconds()
		return l, b.record(outDir, l, "", "setup failed: "+l.Error+"\n")
	}

	l.Batch, l.Session = b.id, p.s.ID()
	if sb := p.s.Sandbox(); sb != nil {
		l.SandboxStart = sb.Info().Start
	}
	if err := b.journalStart(t, p.s.ID()); err != nil {
		b.discard(ctx, p)
		l.Status, l.Exit, l.Error = StatusSetupFailed, exitFailed, err.Error()
		return l, b.record(outDir, l, "", "setup failed: "+l.Error+"\n")
	}
	b.crashAt("started", t.ID)
	var su sandbox.Usage // the cgroup's figures, read before the sandbox goes
	p.s.BeforeClose(func(ctx context.Context, sess sandbox.Session) { su = sandboxUsage(ctx, sess) })
	res, log, denied, runErr := b.agentRun(ctx, p) // the session is closed: no container outlives its task
	b.crashAt("session-ended", t.ID)
	interrupted := res.Status == agent.StatusInterrupted || (runErr != nil && ctx.Err() != nil)
	if interrupted {
		p.remove()
		_ = workspace.RemoveTree(outDir)
		return l, false
	}
	l.Status, l.Steps, l.Session, l.DeniedCalls = res.Status, res.Steps, res.SessionID, denied
	l.PromptTokens, l.CompletionTokens = res.PromptTokens, res.CompletionTokens
	l.Tokens = res.PromptTokens + res.CompletionTokens
	l.FilesChanged = res.FilesChanged
	l.Error = res.Error
	l.Usage = b.taskUsage(res.SessionID, su)
	l.Exit = session.ExitCode(res.Status, runErr)
	if res.Status == agent.StatusError && isInfra(runErr) {
		l.Status = StatusInfraFailed // the sandbox died under the task
	}
	if msg := b.brk.observe(t, runErr, l.Tokens); msg != "" {
		b.prog.notice(msg)
	}
	if err := exportChanges(t.Workspace, p.s.Copy().ChangedRoot(), outDir, res.FilesChanged); err != nil && l.Error == "" {
		l.Status, l.Exit, l.Error = agent.StatusError, exitFailed, "exporting the changed files: "+err.Error()
	}
	kept := b.keepHeld(p)
	l.markReview(kept, b.cfg.AuditPath)
	p.remove()
	l.DurationMS = time.Since(picked).Milliseconds()
	return l, b.record(outDir, l, res.Answer, log)
}

// record writes the task's files and its results line. A line that cannot
// be written leaves the task unfinished (it runs again on --resume).
func (b *batcher) record(outDir string, l Line, answer, log string) bool {
	_ = writeTaskFiles(outDir, answer, log)
	_ = writeJSON(filepath.Join(outDir, ResultFile), l)
	if err := b.journal.put(journalEntry{Event: journalEnd, ID: l.ID, Session: l.Session, Batch: b.id, Result: &l}); err != nil {
		b.prog.notice(fmt.Sprintf("task %s: %v", l.ID, err))
		return false
	}
	b.crashAt("journalled", l.ID)
	if err := b.results.append(l); err != nil {
		b.prog.notice(fmt.Sprintf("task %s: %v", l.ID, err))
		return false
	}
	return true
}

// agentRun runs the agent in the prepared session and closes it.
func (b *batcher) agentRun(ctx context.Context, p *prepared) (agent.Result, string, int, error) {
	t := p.task
	pol := b.policyOf(t)
	log := &capped{max: maxLogBytes}
	printer := &agent.Printer{W: log, Redact: b.cfg.Audit.Redact}
	ev := &counting{Events: printer}
	model, name, err := newModel(b.cfg.Model, t)
	if err != nil {
		_, _ = p.s.Close(ctx, session.End{Status: agent.StatusError, Err: err})
		return agent.Result{Status: agent.StatusError, Error: err.Error(), FilesChanged: []audit.FileChange{}}, "", 0, err
	}
	p.s.Describe(t.Task, name)
	maxSteps := t.MaxSteps
	if maxSteps <= 0 {
		maxSteps = b.cfg.MaxSteps
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = b.cfg.Timeout
	}
	if timeout <= 0 {
		timeout = pol.Sandbox.SessionTimeout
	}
	res, _, err := session.Run(ctx, p.s, agent.RunConfig{
		Task: t.Task, Model: model, ModelName: name, Workspace: t.Workspace,
		MaxSteps: maxSteps, SessionTimeout: timeout, Events: ev, Hints: b.limitHints(t, pol), Setup: p.setup,
	})
	return res, log.String(), ev.denied(), err
}

// counting forwards events and counts denied tool calls.
type counting struct {
	agent.Events
	mu sync.Mutex
	n  int
}

func (c *counting) ToolCall(step, maxSteps int, o agent.Outcome) {
	if o.Denied {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	c.Events.ToolCall(step, maxSteps, o)
}

func (c *counting) denied() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// capped keeps the first max bytes written and notes the rest.
type capped struct {
	mu   sync.Mutex
	max  int
	b    []byte
	lost int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - len(c.b)
	if room >= len(p) {
		c.b = append(c.b, p...)
	} else {
		c.b = append(c.b, p[:max(room, 0)]...)
		c.lost += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost > 0 {
		return string(c.b) + fmt.Sprintf("\n[... %d more bytes of log cut by agentbox ...]\n", c.lost)
	}
	return string(c.b)
}
