package audit

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkAppend is one record written with its fsync.
func BenchmarkAppend(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), Options{Key: testKey, Redact: nil})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rec := Record{Session: "bench", Event: EventToolCall, CallID: "call_1", Tool: "execute_bash", Phase: PhaseResult,
		ExitCode: Ptr(0), DurationMS: Ptr[int64](3), OutputBytes: Ptr[int64](812), OutputPreview: strings.Repeat("output line\n", 30)}
	for b.Loop() {
		r := rec
		if err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLog builds an n-record log in memory with the writer's encoder
// (no fsync): sessions of a start, model calls, tool calls with results
// carrying a few hundred bytes of output, and an end.
func benchLog(tb testing.TB, n int, key []byte) []byte {
	var buf bytes.Buffer
	prev := GenesisPrev
	preview := strings.Repeat("drwxr-xr-x 2 u u 4096 Nov 29 18:00 dir\n", 8)
	for i := range n {
		s := fmt.Sprintf("session-%06d", i/50)
		r := Record{V: 1, Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Millisecond), Session: s, Prev: prev}
		switch k := i % 50; {
		case k == 0:
			r.Event, r.Task, r.Image, r.Model = EventSessionStart, "fix the failing test", "agentbox/base:latest", "gpt-4o-mini"
		case k == 49:
			r.Event, r.Status, r.Steps = EventSessionEnd, "done", 12
		case k%3 == 0:
			r.Event, r.Step, r.TotalTokens = EventModelCall, k, 1234
		case k%3 == 1:
			r.Event, r.CallID, r.Tool, r.Phase, r.Decision, r.Rule = EventToolCall, fmt.Sprint("call_", k), "execute_bash", PhaseDecision, "allow", "commands.allow[0]"
			r.Args = map[string]any{"command": "ls -la /workspace"}
		default:
			r.Event, r.CallID, r.Tool, r.Phase = EventToolCall, fmt.Sprint("call_", k-1), "execute_bash", PhaseResult
			r.ExitCode, r.DurationMS, r.OutputBytes, r.OutputPreview = Ptr(0), Ptr[int64](3), Ptr[int64](812), preview
		}
		line, err := encodeLine(&r, key)
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		prev = sha(string(line))
	}
	return buf.Bytes()
}

func BenchmarkVerify(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		name := "chain"
		var key []byte
		if keyed {
			name, key = "chain+mac", testKey
		}
		b.Run(name, func(b *testing.B) {
			const n = 100_000
			log := benchLog(b, n, key)
			b.SetBytes(int64(len(log)))
			b.ResetTimer()
			for b.Loop() {
				rep, err := Verify(bytes.NewReader(log), key, "")
				if err != nil || !rep.Intact || rep.Records != n {
					b.Fatalf("%v %+v", err, rep.First)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(log))/n, "bytes/record")
		})
	}
}

func TestBenchLogVerifies(t *testing.T) {
	log := benchLog(t, 1000, testKey)
	rep := verifyBytes(t, log, testKey, "")
	if !rep.Intact || rep.Records != 1000 || rep.Sessions != 20 || len(rep.Unended) != 0 {
		t.Fatalf("%+v", rep)
	}
}
