package agent

import (
	"slices"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// scopeOf is the answer's scope for the audit log ("once" unless the
// approver said otherwise).
func scopeOf(ap Approval) string {
	if ap.Scope == "" {
		return audit.ScopeOnce
	}
	return ap.Scope
}

// answerRule is what an answer beyond "once" keeps, exactly as the prompt
// shows it before the user picks: the command prefixes of an execute_bash
// call's asking commands, else the named policy rules that ask (a file
// ask, an exec-time ask), else nothing broader than the call itself
// (which only "deny for this session" may keep).
type answerRule struct {
	prefixes []string // command prefixes, words joined by single spaces
	rules    []string // named policy rules (rememberable)
	subject  string   // tool and subject of the exact call
}

// ruleFor is the rule a session or workspace answer to req keeps.
func ruleFor(req ApprovalRequest) answerRule {
	r := answerRule{subject: req.Tool + " " + req.Subject}
	if parts := askParts(req.Decision); req.Tool == ToolExecuteBash && len(parts) > 0 {
		for _, part := range parts {
			if p := rememberPrefix(part); p != "" && !slices.Contains(r.prefixes, p) {
				r.prefixes = append(r.prefixes, p)
			}
		}
		return r
	}
	asking := askRules(req.Decision)
	named := len(asking) > 0
	for _, a := range asking {
		named = named && rememberable(a)
	}
	if named {
		r.rules = asking
	}
	return r
}

// broad reports whether the rule names more than the exact call (so that
// "yes for this session" and "always" may be offered).
func (r answerRule) broad() bool { return len(r.prefixes) > 0 || len(r.rules) > 0 }

// String is the rule as the prompt and the audit log show it.
func (r answerRule) String() string {
	switch {
	case len(r.prefixes) > 0:
		return "command prefix " + policy.Visible(quoteAll(r.prefixes))
	case len(r.rules) > 0:
		return "every call under rule " + strings.Join(r.rules, ", ")
	}
	return "exactly this call (" + policy.Visible(r.subject) + ")"
}

// sessionAnswers are one session's "yes for this session" and "deny for
// this session" answers, kept in memory only: the next run asks again.
type sessionAnswers struct {
	allowPrefixes, denyPrefixes []string
	allowRules, denyRules       map[string]bool
	denySubjects                map[string]bool
}

func (s *sessionAnswers) allow(r answerRule) {
	s.allowPrefixes = append(s.allowPrefixes, r.prefixes...)
	if s.allowRules == nil {
		s.allowRules = map[string]bool{}
	}
	for _, n := range r.rules {
		s.allowRules[n] = true
	}
}

func (s *sessionAnswers) deny(r answerRule) {
	if s.denyRules == nil {
		s.denyRules, s.denySubjects = map[string]bool{}, map[string]bool{}
	}
	switch {
	case len(r.prefixes) > 0:
		s.denyPrefixes = append(s.denyPrefixes, r.prefixes...)
	case len(r.rules) > 0:
		for _, n := range r.rules {
			s.denyRules[n] = true
		}
	default:
		s.denySubjects[r.subject] = true
	}
}

// answer is the session's earlier answer that covers req, if any. A denial
// wins: one asking command denied for the session denies the whole call.
// An allowance covers the call only when it covers every asking part: one
// remembered prefix must not carry other commands of the same script.
func (s *sessionAnswers) answer(req ApprovalRequest) (Approval, bool) {
	parts := askParts(req.Decision)
	if req.Tool != ToolExecuteBash {
		parts = nil
	}
	asking := askRules(req.Decision)
	r := ruleFor(req)
	denied := s.denySubjects[r.subject]
	for _, part := range parts {
		denied = denied || matchPrefix(part, s.denyPrefixes) != ""
	}
	if len(parts) == 0 {
		for _, n := range asking {
			denied = denied || s.denyRules[n]
		}
	}
	if denied {
		return Approval{Allow: false, DecidedBy: audit.DecidedBySessionRule, Approver: "interactive", Scope: audit.ScopeSession,
			Note: "the user denied this for the rest of the session (" + r.String() + "); do not ask again, do it another way or stop"}, true
	}
	allowed := len(parts) > 0 || len(asking) > 0
	if len(parts) > 0 {
		for _, part := range parts {
			allowed = allowed && matchPrefix(part, s.allowPrefixes) != ""
		}
	} else {
		for _, n := range asking {
			allowed = allowed && s.allowRules[n] && rememberable(n)
		}
	}
	if allowed {
		return Approval{Allow: true, DecidedBy: audit.DecidedBySessionRule, Approver: "interactive", Scope: audit.ScopeSession,
			Note: "yes for this session: " + r.String()}, true
	}
	return Approval{}, false
}

// savedAnswer allows, without asking, an execute_bash call whose every
// asking command starts with a prefix saved for the workspace.
func savedAnswer(st ApprovalStore, req ApprovalRequest) (Approval, bool) {
	if req.Tool != ToolExecuteBash || st == nil {
		return Approval{}, false
	}
	parts := askParts(req.Decision)
	prefixes := st.Prefixes()
	ok := len(parts) > 0
	var matched []string
	for _, part := range parts {
		m := matchPrefix(part, prefixes)
		ok = ok && m != ""
		if m != "" && !slices.Contains(matched, m) {
			matched = append(matched, m)
		}
	}
	if !ok {
		return Approval{}, false
	}
	return Approval{Allow: true, DecidedBy: audit.DecidedBySessionRule, Approver: "remembered", Scope: audit.ScopeWorkspace,
		Note: "always (saved for this workspace) for " + policy.Visible(quoteAll(matched))}, true
}
