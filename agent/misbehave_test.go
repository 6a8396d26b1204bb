package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// runAgainst runs the loop with the real go-openai client against srv.
func runAgainst(t *testing.T, srv *agenttest.Server) (agent.Result, []audit.Record, *fakeSession, error) {
	t.Helper()
	tools, fs, path := newTools(t)
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) { return execResult(0, []byte("ok\n")), nil }
	res, err := run(context.Background(), runCfg(t, tools, newClient(t, srv, &sleeps{}), "task"))
	return res, readAudit(t, path), fs, err
}

// TestLengthCutOffAsksToContinueOnce: a reply cut off at the length limit
// is not the final answer: the model is asked once to continue, and the
// answer is the two parts; on the code before, the cut-off text was the
// answer (exit 0).
func TestLengthCutOffAsksToContinueOnce(t *testing.T) {
	srv := agenttest.New(t, agenttest.Reply{Content: "The answer is forty", FinishReason: "length"}, agenttest.Answer("-two."))
	res, _, _, err := runAgainst(t, srv)
	if err != nil || res.Status != agent.StatusOK || res.Answer != "The answer is forty-two." {
		t.Fatalf("res %+v err %v", res, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Request.Messages
	if last := msgs[len(msgs)-1]; last.Role != agent.RoleUser || !strings.Contains(last.Content, "cut off") {
		t.Errorf("the retry does not ask to continue: %+v", last)
	}
	if prev := msgs[len(msgs)-2]; prev.Role != agent.RoleAssistant || prev.Content != "The answer is forty" {
		t.Errorf("the partial reply is not in the history: %+v", prev)
	}
}

// TestLengthCutOffTwiceFails: cut off again: a failure that carries the
// partial text, never a final answer; a tool call in a cut-off reply
// never runs.
func TestLengthCutOffTwiceFails(t *testing.T) {
	srv := agenttest.New(t,
		agenttest.Reply{Content: "Part one", ToolCalls: []agenttest.Call{agenttest.Bash("echo cut")}, FinishReason: "length"},
		agenttest.Reply{Content: " and part two", FinishReason: "length"},
		agenttest.Answer("never asked"))
	res, recs, fs, err := runAgainst(t, srv)
	if !errors.Is(err, agent.ErrTruncated) || res.Status == agent.StatusOK || res.Answer != "" {
		t.Fatalf("res %+v err %v; want ErrTruncated and no answer", res, err)
	}
	if !strings.Contains(err.Error(), "Part one and part two") {
		t.Errorf("the error does not carry the partial text: %v", err)
	}
	if len(fs.commands()) != 0 {
		t.Errorf("a cut-off tool call ran: %v", fs.commands())
	}
	if end := recs[len(recs)-1]; end.Event != audit.EventSessionEnd || end.Status == agent.StatusOK {
		t.Errorf("session_end = %+v", end)
	}
}

// argsAsObject is a 200 reply whose tool call carries its arguments as a
// JSON object instead of a string (what some endpoints send).
const argsAsObject = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_obj","type":"function","function":{"name":"execute_bash","arguments":{"command":"echo hi"}}}]}}],
"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// TestUndecodableReplyIsAModelError: a 200 reply that is JSON but not a
// usable completion is a model error naming the field, not retried, not
// "unavailable ... quota"; its tool call is in the audit log as refused.
func TestUndecodableReplyIsAModelError(t *testing.T) {
	srv := agenttest.New(t, agenttest.Reply{Body: argsAsObject}, agenttest.Reply{Body: argsAsObject}, agenttest.Reply{Body: argsAsObject})
	_, recs, fs, err := runAgainst(t, srv)
	if !errors.Is(err, agent.ErrModelReply) || errors.Is(err, agent.ErrModelUnavailable) {
		t.Fatalf("err %v; want ErrModelReply", err)
	}
	if msg := err.Error(); strings.Contains(msg, "quota") || !strings.Contains(msg, "arguments") {
		t.Errorf("error %q: want the reason (the arguments field), not a quota hint", msg)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests: a reply that cannot be used was retried", n)
	}
	if len(fs.commands()) != 0 {
		t.Errorf("the call ran: %v", fs.commands())
	}
	var refused []audit.Record
	for _, r := range events(recs, audit.EventToolCall) {
		if r.Decision == "deny" && r.Rule == agent.RuleBadReply {
			refused = append(refused, r)
		}
	}
	if len(refused) != 1 || refused[0].CallID != "call_obj" || refused[0].Tool != "execute_bash" || refused[0].Args["command"] != "echo hi" {
		t.Errorf("refused records %+v; want the one tool call of the reply", refused)
	}
}

// TestOversizedTurnRefusesEachCall: every call past the per-turn bound is
// its own refused record (the code before logged only a count).
func TestOversizedTurnRefusesEachCall(t *testing.T) {
	var calls []agenttest.Call
	for i := range 5 {
		calls = append(calls, agenttest.Call{ID: fmt.Sprintf("c%d", i), Name: "execute_bash", Args: fmt.Sprintf(`{"command":"echo %d"}`, i)})
	}
	srv := agenttest.New(t, agenttest.Tools(calls...), agenttest.Answer("done"))
	tools, fs, path := newTools(t)
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) { return execResult(0, nil), nil }
	cfg := runCfg(t, tools, newClient(t, srv, &sleeps{}), "task")
	cfg.MaxCallsPerTurn = 2
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := fs.commands(); len(got) != 2 {
		t.Errorf("ran %v; want the first 2", got)
	}
	var ids []string
	for _, r := range events(readAudit(t, path), audit.EventToolCall) {
		if r.Rule == agent.RuleCallsPerTurn {
			if r.Decision != "deny" || r.Phase != audit.PhaseDecision || r.Args["command"] == nil {
				t.Errorf("refused record %+v", r)
			}
			ids = append(ids, r.CallID)
		}
	}
	if strings.Join(ids, ",") != "c2,c3,c4" {
		t.Errorf("refused call ids %v; want c2,c3,c4", ids)
	}
}
