package batch

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/workspace"
)

// markReview sets the task's held and alarm counts from its usage and,
// when it has any, Review: what to look at and how. kept says whether the
// held content was kept for `agentbox changes SESSION --held`; auditPath
// is the batch's audit log, where the alarms are.
func (l *Line) markReview(kept bool, auditPath string) {
	l.Held, l.Alarms = l.Usage.Held, l.Usage.Alarms
	var parts []string
	if l.Held > 0 {
		s := plural(l.Held, "held change")
		if kept {
			s += fmt.Sprintf(" (not in files/; agentbox changes %s --held)", l.Session)
		}
		parts = append(parts, s)
	}
	if l.Alarms > 0 {
		parts = append(parts, plural(l.Alarms, "alarm")+fmt.Sprintf(" (agentbox audit show %s --session %s)", auditPath, l.Session))
	}
	l.Review = strings.Join(parts, ", ")
}

// ShownStatus is the status as the table and the progress lines show it:
// a task that has something to review (held changes, alarms) is marked
// with "!" (ok!), whatever it ended with.
func (l Line) ShownStatus() string {
	if l.Review != "" {
		return l.Status + "!"
	}
	return l.Status
}

// keepHeld moves the task's held changes into the held store for review;
// it reports whether they were kept.
func (b *batcher) keepHeld(p *prepared) bool {
	cp := p.s.Copy()
	if b.cfg.HeldStore == "" || cp == nil {
		return false
	}
	n, err := cp.KeepHeld(workspace.Store{Dir: b.cfg.HeldStore})
	if err != nil {
		b.prog.notice(fmt.Sprintf("task %s: %v", p.task.ID, err))
		return false
	}
	return n > 0
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
