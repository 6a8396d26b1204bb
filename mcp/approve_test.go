package mcp

import (
	"testing"

	"github.com/agentbox/agentbox/audit"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An answer of the stateless protocol counts once, for the exact call it
// was asked about.
func TestAskStateBindsAnswers(t *testing.T) {
	s := newAskState()
	state := s.issue("execute_bash", `{"command":"touch a"}`)
	if s.redeem(state, "execute_bash", `{"command":"touch b"}`) {
		t.Error("an answer approved other arguments")
	}
	if s.redeem(state, "write_file", `{"command":"touch a"}`) {
		t.Error("an answer approved another tool")
	}
	if !s.redeem(state, "execute_bash", `{"command":"touch a"}`) {
		t.Fatal("the answer to the question asked was refused")
	}
	if s.redeem(state, "execute_bash", `{"command":"touch a"}`) {
		t.Error("an answer was redeemed twice")
	}
	for _, forged := range []string{"", ".", "x.y", state + "0", "00." + state} {
		if s.redeem(forged, "execute_bash", `{"command":"touch a"}`) {
			t.Errorf("forged state %q accepted", forged)
		}
	}
	// Open questions are bounded.
	for range 3 * maxOpenQuestions {
		s.issue("execute_bash", "{}")
	}
	if len(s.issued) > maxOpenQuestions {
		t.Errorf("%d open questions kept", len(s.issued))
	}
}

// Only an explicit accept with approve=true allows.
func TestApprovalOf(t *testing.T) {
	for _, c := range []struct {
		res   *sdk.ElicitResult
		allow bool
		by    string
	}{
		{&sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, true, audit.DecidedByUser},
		{&sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, false, audit.DecidedByUser},
		{&sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": "true"}}, false, audit.DecidedByUser},
		{&sdk.ElicitResult{Action: "accept"}, false, audit.DecidedByUser},
		{&sdk.ElicitResult{Action: "decline"}, false, audit.DecidedByUser},
		{&sdk.ElicitResult{Action: "cancel"}, false, audit.DecidedByUser},
		{nil, false, audit.DecidedByPolicy},
	} {
		ap := approvalOf(c.res, "test")
		if ap.Allow != c.allow || ap.DecidedBy != c.by {
			t.Errorf("%+v: allow %v by %s, want %v by %s", c.res, ap.Allow, ap.DecidedBy, c.allow, c.by)
		}
	}
}
