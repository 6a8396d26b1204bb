package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

const benchCalls = 200

// BenchmarkLoopCall runs scripted sessions of 200 `execute_bash true`
// calls through the whole loop (scripted model, policy, audit log with
// fsync, real Docker sandbox) and reports the cost per call.
func BenchmarkLoopCall(b *testing.B) {
	sess := testutil.StartSession(b, b.TempDir())
	w, _ := openAudit(b)
	var y strings.Builder
	y.WriteString("turns:\n")
	for range benchCalls {
		y.WriteString("  - tool_calls: [{name: execute_bash, args: {command: \"true\"}}]\n")
	}
	y.WriteString("  - content: done\n")
	s, err := agent.ParseScript("bench", []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	pol := testPolicyT(b)
	b.ResetTimer()
	for range b.N {
		tools := &agent.Tools{Policy: pol, Session: sess, Audit: w, CallTimeout: 10 * time.Second}
		res, err := agent.Run(context.Background(), agent.RunConfig{Task: "bench", Model: agent.NewScripted("bench", s),
			Tools: tools, MaxSteps: benchCalls + 1})
		if err != nil || res.Steps != benchCalls+1 {
			b.Fatalf("res %+v err %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchCalls), "ns/call")
}

// BenchmarkBareExec is the baseline: one session.Exec round trip of `true`.
func BenchmarkBareExec(b *testing.B) {
	sess := testutil.StartSession(b, b.TempDir())
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := sess.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
}
