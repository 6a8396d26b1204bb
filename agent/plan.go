package agent

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentbox/agentbox/internal/textutil"
)

// Plan bounds: a good plan has 3 to 5 steps; up to maxPlanSteps is
// accepted, anything else falls back to the whole task.
const (
	maxPlanSteps     = 8
	maxPlanStepBytes = 500
)

// planPrompt names the registry's tools.
var planPrompt = `You plan work for a software agent that works in a Linux sandbox with the tools ` + toolList() + ` on a project at /workspace.
Break the user's task into 3 to 5 concrete steps, in order; the last step checks the result. Do not do the work and do not call tools.
Reply with JSON only, exactly in this form: {"steps": ["first step", "second step", "third step"]}`

// MakePlan asks the model for a plan of the task in one call. A reply that
// is not a usable plan yields ok false, and the caller runs the whole task
// as one step; err is set only when the model call itself failed.
func MakePlan(ctx context.Context, m Model, task string) (steps []string, resp Response, ok bool, err error) {
	resp, err = m.Complete(ctx, Request{Messages: []Message{
		{Role: RoleSystem, Content: planPrompt},
		{Role: RoleUser, Content: task},
	}})
	if err != nil {
		return nil, resp, false, err
	}
	steps, ok = parsePlan(resp.Message.Content)
	return steps, resp, ok, nil
}

// parsePlan accepts {"steps": [...]} or a bare JSON array of strings,
// possibly inside a Markdown code fence or surrounded by prose.
func parsePlan(s string) ([]string, bool) {
	var raw []any
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		var obj struct {
			Steps []any `json:"steps"`
		}
		if json.Unmarshal([]byte(s[i:j+1]), &obj) == nil {
			raw = obj.Steps
		}
	}
	if raw == nil {
		if i, j := strings.IndexByte(s, '['), strings.LastIndexByte(s, ']'); i >= 0 && j > i {
			_ = json.Unmarshal([]byte(s[i:j+1]), &raw)
		}
	}
	if len(raw) == 0 || len(raw) > maxPlanSteps {
		return nil, false
	}
	steps := make([]string, 0, len(raw))
	for _, r := range raw {
		str, isStr := r.(string)
		str = strings.TrimSpace(str)
		if !isStr || str == "" {
			return nil, false
		}
		steps = append(steps, textutil.Clip(str, maxPlanStepBytes))
	}
	return steps, true
}
