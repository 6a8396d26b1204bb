package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessProtocol is the first protocol version in which a server may
// not send requests (elicitation) while it serves one: it returns input
// requests and the client retries the call with the answers (SEP-2322).
const statelessProtocol = "2026-07-28"

// approvalKey names agentbox's question among a call's input requests.
const approvalKey = "agentbox_approval"

// handler serves one tool: the approval for the policy's ask is obtained
// first (elicitation when the client declares it, else the fallback),
// then the call goes through the pipeline.
func (c *conn) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ctx, cancel := c.callContext(ctx)
		defer cancel(nil)
		args := string(req.Params.Arguments)
		appr, pending := c.approverFor(req, name, args)
		if pending != nil {
			return pending, nil
		}
		defer reportProgress(ctx, req, name)()
		return c.call(ctx, req.ClientInfo(), name, args, appr), nil
	}
}

// approverFor picks who answers the policy's ask for this call. For a
// client on the stateless protocol that can be asked, a call the policy
// asks about and that carries no answer yet returns the question (pending)
// instead.
func (c *conn) approverFor(req *sdk.CallToolRequest, name, args string) (appr agent.Approver, pending *sdk.CallToolResult) {
	fallback := c.cfg.Fallback
	if fallback == nil {
		fallback = denyUnasked{}
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		return fallback, nil
	}
	who := "mcp-elicitation (" + clientName(req.ClientInfo()) + ")"
	if req.ProtocolVersion() < statelessProtocol {
		return &elicitor{ss: req.Session, who: who}, nil
	}
	dec, summary, ok := c.tools.Decide(name, args)
	if !ok || dec.Verdict != policy.Ask {
		return fallback, nil // not consulted: nothing to ask
	}
	if resp, ok := req.Params.InputResponses[approvalKey]; ok {
		if !c.asks.redeem(req.Params.RequestState, name, args) {
			return answeredAs(agent.Approval{Allow: false, DecidedBy: audit.DecidedByPolicy, Approver: who,
				Note: "the answer did not belong to a question agentbox asked for this exact call (ask again by calling the tool again)"}), nil
		}
		er, _ := resp.(*sdk.ElicitResult)
		return answeredAs(approvalOf(er, who)), nil
	}
	return nil, &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{approvalKey: question(agent.ApprovalRequest{Tool: name, Subject: summary, Decision: dec})},
		RequestState:  c.asks.issue(name, args),
	}
}

func answeredAs(ap agent.Approval) agent.Approver { return agent.Answered(ap) }

// elicitor asks the user through the client (elicitation/create) while the
// call waits: protocol versions before the stateless one.
type elicitor struct {
	ss  *sdk.ServerSession
	who string
}

// Approve asks; a client that fails to answer is a denial, not an error of
// the session.
func (e *elicitor) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	res, err := e.ss.Elicit(ctx, question(req))
	if ctx.Err() != nil {
		return agent.Approval{}, context.Cause(ctx)
	}
	if err != nil {
		return agent.Approval{Allow: false, DecidedBy: audit.DecidedByNoTerminal, Approver: e.who,
			Note: "asking the user through the MCP client failed (" + clip(err.Error(), 200) + ")"}, nil
	}
	return approvalOf(res, e.who), nil
}

// question is the elicitation for req: a form with one boolean.
func question(req agent.ApprovalRequest) *sdk.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox: the policy asks before this %s call:\n    %s\n", req.Tool, policy.Visible(clip(req.Subject, 2000)))
	if d := req.Decision; d.Rule != "" {
		fmt.Fprintf(&b, "rule: %s", d.Rule)
		if d.Pattern != "" {
			fmt.Fprintf(&b, " %q", d.Pattern)
		}
		b.WriteByte('\n')
	}
	if req.Decision.Why != "" {
		fmt.Fprintf(&b, "why: %s\n", policy.Visible(req.Decision.Why))
	}
	if req.Decision.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", policy.Visible(req.Decision.Reason))
	}
	b.WriteString("Allow it to run in the sandbox?")
	return &sdk.ElicitParams{Mode: "form", Message: b.String(), RequestedSchema: approvalSchema}
}

var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Allow this call", "description": "true runs the call in the sandbox; false denies it", "default": false},
	},
	"required": []string{"approve"},
}

// approvalOf reads the user's answer: only accept with approve=true
// allows.
func approvalOf(res *sdk.ElicitResult, who string) agent.Approval {
	ap := agent.Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: who}
	switch {
	case res == nil:
		ap.DecidedBy, ap.Note = audit.DecidedByPolicy, "the client's answer was not an elicitation result"
	case res.Action == "accept":
		if v, ok := res.Content["approve"].(bool); ok && v {
			ap.Allow = true
		} else {
			ap.Note = "the user declined"
		}
	case res.Action == "decline":
		ap.Note = "the user declined"
	default:
		ap.Note = "the user dismissed the question"
	}
	return ap
}

// denyUnasked is the default fallback: nobody can be asked.
type denyUnasked struct{}

func (denyUnasked) Approve(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
	return agent.Approval{Allow: false, DecidedBy: audit.DecidedByNoTerminal, Approver: "mcp-fallback",
		Note: "the MCP client cannot ask the user (it declares no elicitation support), so agentbox mcp denies it (--approve deny)"}, nil
}

// Fallback is the approver for clients that cannot be asked: --approve
// allow or deny, decided_by "flag".
func Fallback(allow bool) agent.Approver { return fallbackFlag{allow} }

type fallbackFlag struct{ allow bool }

func (f fallbackFlag) Approve(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
	if f.allow {
		return agent.Approval{Allow: true, DecidedBy: audit.DecidedByFlag, Approver: "mcp --approve allow"}, nil
	}
	return agent.Approval{Allow: false, DecidedBy: audit.DecidedByFlag, Approver: "mcp --approve deny",
		Note: "the MCP client cannot ask the user (it declares no elicitation support), and agentbox mcp runs with --approve deny"}, nil
}

// askState binds the answers of the stateless protocol to the questions
// asked: the request state is a single-use nonce with a MAC over the
// tool and its exact arguments, so an answer cannot approve another call
// or be replayed.
type askState struct {
	key    [32]byte
	mu     sync.Mutex
	issued map[string]bool
}

const maxOpenQuestions = 64

func newAskState() *askState {
	s := &askState{issued: map[string]bool{}}
	_, _ = rand.Read(s.key[:])
	return s
}

func (s *askState) mac(nonce, name, args string) string {
	m := hmac.New(sha256.New, s.key[:])
	for _, part := range []string{nonce, name, args} {
		fmt.Fprintf(m, "%d:%s", len(part), part)
	}
	return hex.EncodeToString(m.Sum(nil))
}

func (s *askState) issue(name, args string) string {
	var n [16]byte
	_, _ = rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.issued) >= maxOpenQuestions {
		for k := range s.issued {
			delete(s.issued, k) // an unanswered question goes first
			break
		}
	}
	s.issued[nonce] = true
	return nonce + "." + s.mac(nonce, name, args)
}

func (s *askState) redeem(state, name, args string) bool {
	nonce, mac, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.mac(nonce, name, args))) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.issued[nonce] {
		return false
	}
	delete(s.issued, nonce)
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
