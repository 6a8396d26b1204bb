package batch

import (
	"context"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// Usage is what happened inside a task (or, summed, a batch): its tool
// calls as the audit log records them, and what its sandbox consumed,
// read from the container's cgroup before removal (zero where the
// backend cannot see it: Measured false).
type Usage struct {
	Calls           int     `json:"calls"`
	FailedCalls     int     `json:"failed_calls"` // commands that exited non-zero
	Denials         int     `json:"denials"`      // calls the policy denied
	ExecDenials     int     `json:"exec_denials"` // programs stopped at exec time
	Alarms          int     `json:"alarms"`       // forbidden effects found and undone, unexpected programs, refused egress
	Held            int     `json:"held"`         // changes held back from the copy (agentbox changes SESSION --held)
	TimedOutCalls   int     `json:"timed_out_calls"`
	OOMKills        int     `json:"oom_kills"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes"` // the batch: the largest of its tasks
	BytesWritten    int64   `json:"bytes_written"`
	NetBytes        int64   `json:"net_bytes"` // through the egress proxy, both ways
	Measured        bool    `json:"measured"`  // the cgroup figures were read
}

// add sums u into t (peak memory: the largest).
func (t *Usage) add(u Usage) {
	t.Calls += u.Calls
	t.FailedCalls += u.FailedCalls
	t.Denials += u.Denials
	t.ExecDenials += u.ExecDenials
	t.Alarms += u.Alarms
	t.Held += u.Held
	t.TimedOutCalls += u.TimedOutCalls
	t.OOMKills += u.OOMKills
	t.CPUSeconds += u.CPUSeconds
	t.PeakMemoryBytes = max(t.PeakMemoryBytes, u.PeakMemoryBytes)
	t.BytesWritten += u.BytesWritten
	t.NetBytes += u.NetBytes
	t.Measured = t.Measured || u.Measured
}

// accountingLog is the batch's audit log: every record gets the batch id
// and is counted for its session's Usage before it is appended.
type accountingLog struct {
	AuditLog
	batch string
	mu    sync.Mutex
	per   map[string]*Usage
}

func newAccountingLog(log AuditLog, batch string) *accountingLog {
	return &accountingLog{AuditLog: log, batch: batch, per: map[string]*Usage{}}
}

// Append stamps the batch id, counts the record and appends it.
func (a *accountingLog) Append(rec *audit.Record) error {
	rec.Batch = a.batch
	a.count(rec)
	return a.AuditLog.Append(rec)
}

func (a *accountingLog) count(rec *audit.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.per[rec.Session]
	if u == nil {
		u = &Usage{}
		a.per[rec.Session] = u
	}
	switch rec.Event {
	case "tool_call":
		if rec.Decision == "deny" && rec.Phase != "result" {
			u.Denials++
		}
		if rec.Phase == "result" {
			u.Calls++
			if rec.ExitCode != nil && *rec.ExitCode != 0 {
				u.FailedCalls++
			}
			if rec.TimedOut != nil && *rec.TimedOut {
				u.TimedOutCalls++
			}
		}
	case audit.EventExecDenied:
		u.ExecDenials++
	case audit.EventAlarm:
		if rec.Action == "held" {
			u.Held++ // a held change is recorded as an alarm with action held
		} else {
			u.Alarms++
		}
	case audit.EventNet:
		if rec.BytesUp != nil {
			u.NetBytes += *rec.BytesUp
		}
		if rec.BytesDown != nil {
			u.NetBytes += *rec.BytesDown
		}
	}
}

// take returns and forgets a session's counts.
func (a *accountingLog) take(session string) Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.per[session]
	delete(a.per, session)
	if u == nil {
		return Usage{}
	}
	return *u
}

// sandboxUsage reads what the task's sandbox consumed, before Close.
func sandboxUsage(ctx context.Context, s sandbox.Session) sandbox.Usage {
	r, ok := s.(sandbox.UsageReporter)
	if !ok {
		return sandbox.Usage{}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	u, _ := r.Usage(ctx)
	return u
}

// taskUsage is a task's Usage: the audit counts and the sandbox's.
func (b *batcher) taskUsage(session string, su sandbox.Usage) Usage {
	u := b.acct.take(session)
	u.Measured = su.Known
	u.CPUSeconds, u.PeakMemoryBytes, u.BytesWritten = su.CPUSeconds, su.PeakMemoryBytes, su.BytesWritten
	u.OOMKills = su.OOMKills
	return u
}
