package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
)

// Rules named in the records of tool calls agentbox refused before any
// policy decision: the call never ran.
const (
	RuleCallsPerTurn = "agentbox.max_calls_per_turn" // past the per-turn bound
	RuleBadReply     = "agentbox.model_reply"        // carried by a reply that could not be used
)

// Refuse records a tool call that agentbox will not run, as a tool_call
// decision record (decision deny, the rule naming why): every tool call
// the model asked for is in the audit log, one record each.
func (t *Tools) Refuse(callID, name, argsJSON, rule, reason string) error {
	var args map[string]any
	if json.Unmarshal([]byte(argsJSON), &args) != nil || args == nil {
		args = map[string]any{"arguments": textutil.Clip(argsJSON, 4096)}
	}
	return t.record(&audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: callID, Tool: name,
		Args: args, Decision: "deny", Rule: rule, DecidedBy: audit.DecidedByPolicy, Reason: reason})
}

// refuseReply records the tool calls of a model reply that could not be
// used (err is a *ModelError of kind ErrModelReply), one by one.
func (r *runner) refuseReply(err error) error {
	var me *ModelError
	if !errors.As(err, &me) || len(me.Calls) == 0 {
		return nil
	}
	for i, c := range me.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", r.step, i+1)
		}
		if rerr := r.tools.Refuse(id, c.Name, c.Args, RuleBadReply, "not run: the model's reply could not be used ("+me.Msg+")"); rerr != nil {
			return rerr
		}
	}
	return nil
}
