package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
)

// SetupEvents is implemented by Events that show the setup commands (a
// devcontainer's lifecycle commands) as they run: the printer's
// `[setup 1/2]` line. Run calls it only when its Events implements it.
type SetupEvents interface {
	// SetupStarted reports that setup command i of n begins.
	SetupStarted(i, n int, command string)
	// SetupCall reports how setup command i of n ended.
	SetupCall(i, n int, o Outcome)
}

// Setup runs commands (a devcontainer's lifecycle commands) one after
// another as ordinary execute_bash calls (call ids setup_1, ...): the same
// policy decisions, approvals and audit records as the agent's own. ev
// (nil = none) is told about each. It stops at the first that does not
// succeed and says which, why, and what to change.
func (t *Tools) Setup(ctx context.Context, cmds []string, ev SetupEvents) (Outcome, error) {
	var o Outcome
	for i, c := range cmds {
		args, _ := json.Marshal(map[string]string{"command": c})
		if ev != nil {
			ev.SetupStarted(i+1, len(cmds), c)
		}
		o = t.Call(ctx, fmt.Sprintf("setup_%d", i+1), ToolExecuteBash, string(args))
		if ev != nil {
			ev.SetupCall(i+1, len(cmds), o)
		}
		what := fmt.Sprintf("setup command %d of %d (%s)", i+1, len(cmds), textutil.OneLine(policy.Visible(o.Summary), 120))
		switch {
		case o.Err != nil:
			return o, fmt.Errorf("%s: %w", what, o.Err)
		case o.Denied:
			return o, fmt.Errorf("%s %s", what, t.setupDenial(c, o))
		case o.TimedOut:
			return o, fmt.Errorf("%s timed out after %s and was killed; nothing after it ran; raise sandbox.timeouts.call in the policy, or make it faster in devcontainer.json", what, t.callTimeout())
		case o.ExitCode != 0:
			return o, fmt.Errorf("%s exited %d; nothing after it ran; fix it in devcontainer.json", what, o.ExitCode)
		}
	}
	return o, nil
}

// setupDenial says why a setup command was refused and what lets it run:
// the rule and the policy's reason, who refused an ask, and the fix (the
// policy entry to add, an approval, or the command to change).
func (t *Tools) setupDenial(command string, o Outcome) string {
	explain := "agentbox policy explain " + quoteArgv([]string{command})
	if len(command) > 200 || strings.Contains(command, "\n") {
		explain = "agentbox policy explain shows the decision"
	}
	if o.Policy != policy.Ask.String() {
		rule := ""
		if o.Rule != "" {
			rule = " " + o.Rule
		}
		return fmt.Sprintf("was denied by policy: %s; nothing after it ran. A denial is never asked about: change the command in devcontainer.json, or the policy's rule%s (%s)", o.Reason, rule, explain)
	}
	fix := []string{"answer `a` at a terminal's prompt (saved for this workspace)", "pass --approve allow"}
	var add []string
	for _, p := range askParts(t.Policy.Decide(policy.Action{Kind: policy.Command, Command: command})) {
		if pre := rememberPrefix(p); pre != "" && (p.Rule == "commands.default" || p.Rule == "commands.dynamic") {
			add = append(add, strconv.Quote(pre))
		}
	}
	if len(add) > 0 {
		fix = append([]string{fmt.Sprintf("add %s to commands.allow in the policy", strings.Join(add, ", "))}, fix...)
	}
	return fmt.Sprintf("needs approval: %s. Not approved (%s); nothing after it ran. To run it: %s (%s)", o.Reason, refusedBy(o.DecidedBy), strings.Join(fix, ", or "), explain)
}

// refusedBy says who refused an ask, by the approval's decided_by.
func refusedBy(by string) string {
	switch by {
	case audit.DecidedByNoTerminal:
		return "there was no terminal to ask on"
	case audit.DecidedByFlag:
		return "--approve deny"
	case audit.DecidedByUser:
		return "refused at the prompt"
	case audit.DecidedBySessionRule:
		return "denied for the session by an earlier answer"
	}
	return "refused by " + by
}

// setupThenWork runs the setup commands, then the agent's steps.
func (r *runner) setupThenWork(ctx context.Context) (string, error) {
	ev, _ := r.ev.(SetupEvents)
	if _, err := r.tools.Setup(ctx, r.cfg.Setup, ev); err != nil {
		return "", err
	}
	return r.work(ctx)
}
