package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// signalModel tells when its first request arrives, then answers, or, with
// block, waits for its context to end.
type signalModel struct {
	asked chan struct{}
	block bool
	ended chan error
}

func (m *signalModel) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	close(m.asked)
	if m.block {
		<-ctx.Done()
		m.ended <- ctx.Err()
		return agent.Response{}, ctx.Err()
	}
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done"}}, nil
}

// TestSandboxStartsWhileModelAsked: Start is called while the first model
// request is in flight — Start waits for the request, which would
// deadlock (and fail at the deadline) if the two ran one after the other.
func TestSandboxStartsWhileModelAsked(t *testing.T) {
	w, path := openAudit(t)
	m := &signalModel{asked: make(chan struct{})}
	tools := &agent.Tools{Policy: testPolicyT(t), Audit: w, SessionID: "0123456789abcdef0123456789abcdef"}
	res, err := run(context.Background(), agent.RunConfig{Task: "t", Model: m, Tools: tools,
		Start: func(ctx context.Context) (sandbox.Session, error) {
			select {
			case <-m.asked:
				return newFake(t, path), nil
			case <-time.After(time.Minute):
				return nil, errors.New("the model was not asked while the sandbox started")
			}
		}})
	if err != nil || res.Status != agent.StatusOK || res.Answer != "done" || tools.Session == nil {
		t.Fatalf("res %+v err %v", res, err)
	}
	recs := readAudit(t, path)
	if len(recs) < 3 || recs[0].Event != "session_start" || recs[1].Event != "model_call" {
		t.Fatalf("records: %+v", recs)
	}
}

// TestSandboxStartFailureCancelsModel: when the sandbox cannot start, the
// request already sent is cancelled and waited for, and nothing is
// recorded.
func TestSandboxStartFailureCancelsModel(t *testing.T) {
	w, path := openAudit(t)
	m := &signalModel{asked: make(chan struct{}), block: true, ended: make(chan error, 1)}
	tools := &agent.Tools{Policy: testPolicyT(t), Audit: w, SessionID: "0123456789abcdef0123456789abcdef"}
	_, err := run(context.Background(), agent.RunConfig{Task: "t", Model: m, Tools: tools,
		Start: func(ctx context.Context) (sandbox.Session, error) {
			<-m.asked
			return nil, sandbox.ErrImageMissing
		}})
	if !errors.Is(err, sandbox.ErrImageMissing) || tools.Session != nil {
		t.Fatalf("err %v session %v", err, tools.Session)
	}
	select {
	case e := <-m.ended:
		if !errors.Is(e, context.Canceled) {
			t.Errorf("model request ended with %v", e)
		}
	default:
		t.Error("Run returned while the model request was still in flight")
	}
	if recs := readAudit(t, path); len(recs) != 0 {
		t.Errorf("records written for a sandbox that never started: %+v", recs)
	}
}
