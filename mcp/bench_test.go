package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPFirstCall measures what a user of an MCP client feels when
// the sandbox starts on the first tool call or at initialize: the time to
// connect (initialize) and the time of the first execute_bash call made
// right after it (think=0: the worst case for a start at initialize) or
// after a pause standing for the client's start-up and the model's first
// turn (think=4s), then a warm call.
func BenchmarkMCPFirstCall(b *testing.B) {
	for _, c := range []struct {
		start string
		think time.Duration
	}{{"first-call", 0}, {"initialize", 0}, {"first-call", 4 * time.Second}, {"initialize", 4 * time.Second}} {
		start := c.start
		b.Run(start+"/think="+c.think.String(), func(b *testing.B) {
			var connect, first, warm time.Duration
			for b.Loop() {
				s := newServer(b, "--start", start)
				cmd := s.cmd(b)
				client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
				ctx := context.Background()
				t0 := time.Now()
				cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(c.think) // the model's turn, not a wait for a condition
				t1 := time.Now()
				args := &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": "echo hi"}}
				if _, err := cs.CallTool(ctx, args); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if _, err := cs.CallTool(ctx, args); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				_ = cs.Close()
				connect += t1.Sub(t0) - c.think
				first += t2.Sub(t1)
				warm += t3.Sub(t2)
			}
			n := float64(b.N)
			b.ReportMetric(float64(connect.Milliseconds())/n, "connect-ms")
			b.ReportMetric(float64(first.Milliseconds())/n, "first-call-ms")
			b.ReportMetric(float64(warm.Milliseconds())/n, "warm-call-ms")
		})
	}
}
