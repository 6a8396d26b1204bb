package batch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/agent"
)

// resumeNote is what --resume says before it runs anything: which tasks
// it skips and why, with the flag that would run each kind, and how many
// it runs. "" when nothing is skipped.
func resumeNote(cfg Config, finished map[string]Line, interrupted map[string]bool, pending int) string {
	byStatus := map[string]int{}
	for _, l := range finished {
		byStatus[l.Status]++
	}
	var parts []string
	if n := byStatus[agent.StatusOK]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d ok", n))
	}
	if n := byStatus[StatusInfraFailed]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d infra_failed (--retry-infra reruns them)", n))
	}
	failed := 0
	for s, n := range byStatus {
		if s != agent.StatusOK && s != StatusInfraFailed {
			failed += n
		}
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (--retry-failed reruns them)", failed))
	}
	var intr []string
	if !cfg.RerunInterrupted {
		for id := range interrupted {
			intr = append(intr, id)
		}
		sort.Strings(intr)
	}
	if len(parts) == 0 && len(intr) == 0 {
		return ""
	}
	msg := "resuming: skipping"
	if len(parts) > 0 {
		msg += fmt.Sprintf(" %d finished earlier (%s)", len(finished), strings.Join(parts, ", "))
	}
	if len(intr) > 0 {
		if len(parts) > 0 {
			msg += " and"
		}
		shown := intr
		if len(shown) > 5 {
			shown = append(shown[:5:5], "…")
		}
		msg += fmt.Sprintf(" %d interrupted (%s: its session started but never ended, so it may have had effects; --rerun-interrupted runs it again)", len(intr), strings.Join(shown, ", "))
	}
	return msg + fmt.Sprintf("; running %d", pending)
}
