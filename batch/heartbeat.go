package batch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/textutil"
)

// DefaultHeartbeat is how often piped output says which tasks are still
// running, once a task has run that long.
const DefaultHeartbeat = 30 * time.Second

// heartbeat prints, without a terminal, one line every interval naming
// the tasks that have run longer than it, until ctx ends.
func (b *batcher) heartbeat(ctx context.Context, interval time.Duration) {
	if b.prog.tty || interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if msg := b.prog.longRunning(interval); msg != "" {
				b.prog.notice(msg)
			}
		}
	}
}

// longRunning is the heartbeat line: the tasks running for at least d,
// longest first, or "".
func (p *progress) longRunning(d time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	type run struct {
		id   string
		took time.Duration
	}
	var long []run
	for id, at := range p.since {
		if el := time.Since(at); el >= d {
			long = append(long, run{id, el})
		}
	}
	if len(long) == 0 {
		return ""
	}
	sort.Slice(long, func(i, j int) bool { return long[i].took > long[j].took })
	parts := make([]string, 0, min(len(long), 5))
	for i, r := range long {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(long)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", textutil.OneLine(r.id, 64), shortDuration(r.took)))
	}
	return fmt.Sprintf("still running: %s; %d/%d done", strings.Join(parts, ", "), p.done, p.total)
}
