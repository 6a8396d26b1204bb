package policy

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// WriteYAML writes the suggestion as a policy file that the strict loader
// reads: the base's settings and refusals, the suggested allow rules each
// with a comment naming the audit lines behind it, and what needs a
// person's decision as comments at the end. from names the logs read.
func (s *Suggestion) WriteYAML(w io.Writer, from []string) error {
	b := s.Base
	var o strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&o, format, args...) }
	p("# Suggested by `agentbox policy suggest` from %s\n", commentText(strings.Join(from, ", ")))
	p("# on %s: the least policy that allows what those runs did.\n", commentText(b.Describe()))
	p("# Every rule names the audit lines (file:line) that justify it. Review it, then:\n")
	p("#   agentbox policy diff default THIS   and   agentbox policy check THIS --within default\n")
	p("#   agentbox audit replay LOG --policy THIS   (on a run that was not learned from)\n")
	p("version: 1\n\nsandbox:\n")
	sb := b.Sandbox
	network := "none"
	if len(s.Hosts) > 0 {
		network = "proxy"
	}
	p("  image: %s\n  runtime: %s\n  workspace: %s\n  network: %s\n  user: %s\n", yq(sb.Image), yq(sb.Runtime), yq(string(sb.Workspace)), network, yq(sb.User))
	p("  limits: {cpus: %s, memory: %s, pids: %d", strconv.FormatFloat(sb.CPUs, 'f', -1, 64), formatSize(sb.MemoryBytes), sb.Pids)
	if sb.DiskSet {
		p(", disk: %s", formatSize(sb.DiskBytes))
	}
	p("}\n  timeouts: {call: %s, call_max: %s, session: %s}\n", sb.CallTimeout, sb.CallTimeoutMax, sb.SessionTimeout)
	p("  output: {max_bytes: %s}\n", formatSize(sb.OutputMaxBytes))
	p("  env: [%s]\n  background: %s\n  git_identity: %s\n\n", joinQ(sb.Env), sb.Background, yq(sb.GitIdentity))

	p("commands:\n  default: deny              # what the runs did not do is refused\n  dynamic: %s\n  unknown_binaries: %s\n", b.cmd.dynamic, b.cmd.unknown)
	ruleList(&o, "  allow", s.Allow)
	ruleList(&o, "  ask", s.Ask)
	p("  deny:                       # kept from the base\n")
	for _, r := range b.cmd.lists[Deny] {
		if r.why != "" {
			p("    - {match: %s, why: %s}\n", yq(r.match), yq(r.why))
		} else {
			p("    - %s\n", yq(r.match))
		}
	}
	if len(b.cmd.lists[Deny]) == 0 {
		p("    []\n")
	}
	p("\nfiles:\n  read:\n")
	ruleList(&o, "    allow", s.Reads)
	p("    deny: [%s]\n  write:\n", joinQ(b.read.deny))
	ruleList(&o, "    allow", s.Writes)
	p("    deny: [%s]\n", joinQ(b.write.deny))
	if len(s.Hosts) > 0 || len(b.net.deny) > 0 {
		p("\nnetwork:\n")
		ruleList(&o, "  allow", s.Hosts)
		var deny []string
		for _, r := range b.net.deny {
			deny = append(deny, r.Pattern)
		}
		p("  deny: [%s]\n", joinQ(deny))
	}
	var redact []string
	for _, re := range b.Audit.Redact {
		redact = append(redact, re.String())
	}
	p("\naudit:\n  redact: [%s]\n  preview_bytes: %s\n", joinQ(redact), formatSize(b.Audit.PreviewBytes))
	if len(s.Decision) > 0 {
		p("\n# Needs your decision: the runs did these, and the base refuses or asks\n")
		p("# about them by a rule (a built-in hazard rule is never suggested away).\n")
		p("# Allow one only by writing the rule yourself, knowing what it lets through.\n")
		for _, u := range s.Decision {
			p("#   %s: %s by %s  # %s\n", commentText(u.What), u.Verdict, commentText(u.Rule), commentText(sourceText(u.Sources)))
		}
	}
	_, err := io.WriteString(w, o.String())
	return err
}

func ruleList(o *strings.Builder, key string, rs []SuggestedRule) {
	if len(rs) == 0 {
		fmt.Fprintf(o, "%s: []\n", key)
		return
	}
	fmt.Fprintf(o, "%s:\n", key)
	indent := strings.Repeat(" ", len(key)-len(strings.TrimLeft(key, " "))+2)
	for _, r := range rs {
		fmt.Fprintf(o, "%s- %s  # %s\n", indent, yq(r.Match), commentText(sourceText(r.Sources)))
	}
}

// sourceText names the audit lines behind a rule, at most five.
func sourceText(src []string) string {
	if len(src) == 0 {
		return "no audit line"
	}
	if len(src) > 5 {
		return strings.Join(src[:5], ", ") + fmt.Sprintf(" and %d more", len(src)-5)
	}
	return strings.Join(src, ", ")
}

// yq quotes a string for YAML (flow context safe).
func yq(s string) string {
	b, err := yaml.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	out := strings.TrimSuffix(string(b), "\n")
	if strings.ContainsAny(out, "\n") || strings.ContainsAny(s, ",[]{}#&*!|>'\"%@`") || out == s && s == "" {
		return strconv.Quote(s)
	}
	return out
}

func joinQ(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = yq(x)
	}
	return strings.Join(q, ", ")
}

// commentText keeps a comment on one line and free of control characters.
func commentText(s string) string { return oneLine(s) }
