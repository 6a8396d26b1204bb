package agent

import (
	"context"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// ApprovalStore holds the command prefixes the user answered "always" to,
// for one workspace, across sessions (the CLI keeps them in the state
// directory: `agentbox approvals list|remove`).
type ApprovalStore interface {
	// Prefixes are the remembered command prefixes, words joined by
	// single spaces.
	Prefixes() []string
	// Add remembers more prefixes.
	Add(prefixes []string) error
	// Where says where Add saves them (the file and the workspace), for
	// the prompt to show before the user picks.
	Where() string
}

// Remembered allows, without asking, an execute_bash call whose every
// asking command starts with a prefix of Store; anything else goes to
// Next.
type Remembered struct {
	Store ApprovalStore
	Next  Approver
}

var _ Approver = Remembered{}

// Approve allows remembered commands and asks Next about the rest.
func (r Remembered) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	if ap, ok := savedAnswer(r.Store, req); ok {
		return ap, nil
	}
	if r.Next == nil {
		return DenyAll{}.Approve(ctx, req)
	}
	return r.Next.Approve(ctx, req)
}

// askParts are the parts of d that ask.
func askParts(d policy.Decision) []policy.Part {
	var out []policy.Part
	for _, part := range d.Parts {
		if part.Verdict == policy.Ask {
			out = append(out, part)
		}
	}
	return out
}

// rememberPrefix is what "always" remembers for a part: the rule's pattern
// when it is plain words (`git push`), else the exact command shown.
func rememberPrefix(part policy.Part) string {
	if part.Pattern != "" && !strings.ContainsAny(part.Pattern, "*?[]{}\\\"'$") && strings.Contains(part.Rule, "[") {
		return strings.Join(strings.Fields(part.Pattern), " ")
	}
	return strings.Join(part.Argv, " ")
}

// matchPrefix returns the prefix of prefixes that argv starts with, word
// by word ("" if none).
func matchPrefix(argv []string, prefixes []string) string {
	if len(argv) == 0 {
		return ""
	}
	for _, p := range prefixes {
		words := strings.Split(p, " ")
		if len(words) == 0 || len(words) > len(argv) {
			continue
		}
		ok := true
		for i, w := range words {
			ok = ok && argv[i] == w
		}
		if ok {
			return p
		}
	}
	return ""
}
