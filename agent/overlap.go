package agent

import (
	"context"
	"time"
)

type modelReply struct {
	resp Response
	err  error
}

// firstMessages is the history of the first model request: the system
// prompt and, without a plan, the task.
func (r *runner) firstMessages() []Message {
	msgs := []Message{{Role: RoleSystem, Content: r.redact(SystemPrompt(r.promptInput()))}}
	if !r.cfg.Plan {
		msgs = append(msgs, Message{Role: RoleUser, Content: r.redact(r.cfg.Task)})
	}
	return msgs
}

// startSandbox starts the sandbox with cfg.Start while the first model
// request is in flight (without a plan), and waits for the sandbox. The
// model's reply is picked up by the first step. If the sandbox cannot
// start, the request is cancelled and waited for: nothing outlives Run.
func (r *runner) startSandbox(ctx context.Context) error {
	var cancel context.CancelFunc
	if !r.cfg.Plan {
		r.msgs = r.firstMessages()
		req := Request{Messages: append([]Message(nil), r.msgs...), Tools: r.defs, Step: 1, OnDelta: r.onDelta(1)}
		var mctx context.Context
		mctx, cancel = context.WithCancel(ctx)
		r.first = make(chan modelReply, 1)
		r.firstStart = time.Now()
		go func() {
			resp, err := r.cfg.Model.Complete(mctx, req)
			r.first <- modelReply{resp, err}
		}()
	}
	sess, err := r.cfg.Start(ctx)
	if err != nil {
		if cancel != nil {
			cancel()
			<-r.first
			r.first = nil
		}
		return err
	}
	r.cancelFirst = cancel
	r.tools.Session = sess
	return nil
}

// dropFirst cancels the first model request if no step took its reply, and
// waits for it: the request does not outlive Run.
func (r *runner) dropFirst() {
	if r.first == nil {
		return
	}
	if r.cancelFirst != nil {
		r.cancelFirst()
	}
	if !r.firstTaken {
		<-r.first
	}
}

// complete asks the model, taking the reply of the request sent while the
// sandbox started for the first step.
func (r *runner) complete(ctx context.Context, req Request) (Response, error) {
	if r.first != nil && !r.firstTaken && req.Step == 1 {
		select {
		case rep := <-r.first:
			r.firstTaken = true
			return rep.resp, rep.err
		case <-ctx.Done():
			return Response{}, context.Cause(ctx)
		}
	}
	return r.cfg.Model.Complete(ctx, req)
}
