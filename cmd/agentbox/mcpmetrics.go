package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
)

// sessionMetrics counts what a long-running session (mcp) records in its
// audit log, for Prometheus text metrics at --metrics-addr.
type sessionMetrics struct {
	agent.RedactingLog
	rt *cappedRuntime

	mu                                         sync.Mutex
	calls, failed, denials, execDenials        int64
	alarms, held, changedFiles, approvalsAsked int64
}

// Append counts the record and appends it.
func (m *sessionMetrics) Append(rec *audit.Record) error {
	m.mu.Lock()
	switch rec.Event {
	case audit.EventToolCall:
		if rec.Decision == "deny" && rec.Phase != "result" {
			m.denials++
		}
		if rec.Phase == "result" {
			m.calls++
			if rec.ExitCode != nil && *rec.ExitCode != 0 {
				m.failed++
			}
		}
	case audit.EventApproval:
		m.approvalsAsked++
	case audit.EventExecDenied:
		m.execDenials++
	case audit.EventAlarm:
		if rec.Action == "held" {
			m.held++
		} else {
			m.alarms++
		}
	case audit.EventChanges:
		m.changedFiles += int64(audit.CountFiles(rec.Files))
	}
	m.mu.Unlock()
	return m.RedactingLog.Append(rec)
}

// write writes the metrics in the Prometheus text format.
func (m *sessionMetrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	metric := func(name, typ, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
	}
	metric("agentbox_mcp_tool_calls_total", "counter", "Tool calls that ran.", m.calls)
	metric("agentbox_mcp_tool_calls_failed_total", "counter", "Commands that exited non-zero.", m.failed)
	metric("agentbox_mcp_denials_total", "counter", "Calls the policy (or the user) refused.", m.denials)
	metric("agentbox_mcp_approvals_total", "counter", "Approval decisions recorded.", m.approvalsAsked)
	metric("agentbox_mcp_exec_denials_total", "counter", "Programs stopped at exec time.", m.execDenials)
	metric("agentbox_mcp_alarms_total", "counter", "Alarms (forbidden effects undone, unexpected programs, refused egress).", m.alarms)
	metric("agentbox_mcp_held_changes_total", "counter", "Changes held back from the workspace (agentbox changes SESSION --held).", m.held)
	metric("agentbox_mcp_files_changed_total", "counter", "Files changed in the workspace (changes records).", m.changedFiles)
	metric("agentbox_mcp_sandboxes_running", "gauge", "Sandboxes of this process running now.", m.rt.running.Load())
	metric("agentbox_mcp_slot_waits_total", "counter", "Times a sandbox waited for a slot of the host-wide cap.", m.rt.waits.Load())
	metric("agentbox_mcp_slot_waiting", "gauge", "Sandboxes waiting for a slot now.", m.rt.waiting.Load())
}

// serve serves the metrics at http://addr/metrics until stop is called;
// the address (port 0 picks one) is said on out.
func (m *sessionMetrics) serve(addr string, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--metrics-addr %s: %w; choose a free host:port", addr, err)}
	}
	fmt.Fprintf(out, "agentbox: metrics at http://%s/metrics\n", ln.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.write(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "agentbox: metrics: %v\n", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
