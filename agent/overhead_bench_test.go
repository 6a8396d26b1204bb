package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// instantSession answers every call at once: what the loop costs by itself.
type instantSession struct{}

func (instantSession) ID() string                  { return "0123456789abcdef0123456789abcdef" }
func (instantSession) Info() sandbox.Info          { return sandbox.Info{} }
func (instantSession) Close(context.Context) error { return nil }
func (instantSession) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{OutputSHA: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, nil
}
func (instantSession) ReadFile(context.Context, sandbox.ReadRequest) (sandbox.ReadResult, error) {
	return sandbox.ReadResult{}, nil
}
func (instantSession) WriteFile(context.Context, sandbox.WriteRequest) (sandbox.WriteResult, error) {
	return sandbox.WriteResult{}, nil
}

// BenchmarkLoopOverhead is BenchmarkLoopCall without the sandbox: the
// scripted model, the policy, the audit log (three fsynced records per
// call) and the pipeline, with a session that answers at once. It needs
// no engine; its ns/call is the loop's own cost.
func BenchmarkLoopOverhead(b *testing.B) {
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
		tools := &agent.Tools{Policy: pol, Session: instantSession{}, Audit: w, CallTimeout: 10 * time.Second}
		res, err := agent.Run(context.Background(), agent.RunConfig{Task: "bench", Model: agent.NewScripted("bench", s),
			Tools: tools, MaxSteps: benchCalls + 1})
		if err != nil || res.Steps != benchCalls+1 {
			b.Fatalf("res %+v err %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchCalls), "ns/call")
}
