package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox/agentbox/agent/agenttest"
	openai "github.com/sashabaranov/go-openai"
)

// FuzzStreamAssemble: any sequence of payloads is assembled or refused
// with a *ModelError, never a panic; an assembled reply has a finish
// reason, and a reply without finish_reason or [DONE] is never complete.
func FuzzStreamAssemble(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}` + "\n" +
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":1}"}}]}}]}` + "\n" +
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":{"o":1}}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1},{"index":99999999999}]}}]}`,
		`{"choices": [oops`,
		`{"choices":[{"index":"0","delta":{"content":5}}]}`,
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, stream string, done bool) {
		a := newStreamAssembler()
		for _, line := range strings.Split(stream, "\n") {
			if _, err := a.add([]byte(line)); err != nil {
				var me *ModelError
				if !errors.As(err, &me) || me.Msg == "" {
					t.Fatalf("add: %v is not a *ModelError with a reason", err)
				}
				return
			}
		}
		resp, err := a.result(done)
		if err != nil {
			var me *ModelError
			if !errors.As(err, &me) || me.Msg == "" {
				t.Fatalf("result: %v is not a *ModelError with a reason", err)
			}
			return
		}
		if resp.FinishReason == "" || (!done && a.finish == "") {
			t.Fatalf("complete without an end: %+v", resp)
		}
		if len(resp.Message.ToolCalls) > maxStreamCalls {
			t.Fatalf("%d calls", len(resp.Message.ToolCalls))
		}
	})
}

// FuzzStreamSplit: a reply cut into chunks at any size, its calls
// interleaved or not, sent through JSON, assembles to the reply itself.
func FuzzStreamSplit(f *testing.F) {
	f.Add("Let me look.", `{"command":"ls -la"}`, `{"path":"é/ü.txt"}`, uint8(3), true)
	f.Add("", `{"command":"printf '\"\\n'"}`, "", uint8(1), false)
	f.Add("ünïcødé ✓", "", `{}`, uint8(7), true)
	f.Add("x", `{"a":"`+strings.Repeat("b", 300)+`"}`, `{"c":1}`, uint8(13), true)
	f.Fuzz(func(t *testing.T, content, args1, args2 string, size uint8, interleave bool) {
		for _, s := range []string{content, args1, args2} {
			if !utf8.ValidString(s) {
				t.Skip() // JSON carries valid UTF-8 only
			}
		}
		msg := openai.ChatCompletionMessage{Content: content}
		if args1 != "" {
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: "c1", Function: openai.FunctionCall{Name: "execute_bash", Arguments: args1}})
		}
		if args2 != "" {
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: "c2", Function: openai.FunctionCall{Name: "read_file", Arguments: args2}})
		}
		a := newStreamAssembler()
		var text bytes.Buffer
		for _, c := range agenttest.StreamChunks(msg, "stop", int(size), interleave) {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			d, err := a.add(b)
			if err != nil {
				t.Fatalf("add %s: %v", b, err)
			}
			text.WriteString(d.Text)
		}
		resp, err := a.result(false)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Message
		if got.Content != content || text.String() != content || len(got.ToolCalls) != len(msg.ToolCalls) || resp.FinishReason != "stop" {
			t.Fatalf("got %+v, want %+v", got, msg)
		}
		for i, tc := range msg.ToolCalls {
			g := got.ToolCalls[i]
			if g.ID != tc.ID || g.Function.Name != tc.Function.Name || g.Function.Arguments != tc.Function.Arguments || g.Type != openai.ToolTypeFunction {
				t.Fatalf("call %d: got %+v, want %+v", i, g, tc)
			}
		}
	})
}

// TestPrinterStreamLabel: the live line shows a streamed reply arriving,
// redacted as a whole: a secret still arriving is held back, never shown
// in part; a retry starts over.
func TestPrinterStreamLabel(t *testing.T) {
	secret := "sk-live-0123456789abcdef"
	p := &Printer{Live: true, Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }}
	p.ModelDelta(2, Delta{Text: "Here is the plan.\nThe key is " + secret[:10]})
	l := p.streamLabel(2)
	if !strings.Contains(l, "receiving") || !strings.Contains(l, "The key is") || strings.Contains(l, secret[:4]) {
		t.Fatalf("label %q", l)
	}
	p.ModelDelta(2, Delta{Text: secret[10:] + " and done\n"})
	if l := p.streamLabel(2); !strings.Contains(l, "The key is [REDACTED] and done") || strings.Contains(l, secret[3:]) {
		t.Fatalf("label %q", l)
	}
	if l := p.streamLabel(3); l != "" {
		t.Errorf("another step's label %q", l)
	}
	p.ModelDelta(2, Delta{Failed: true})
	p.ModelDelta(2, Delta{Tool: "execute_bash", ArgBytes: 1500})
	if l := p.streamLabel(2); l != "  writing execute_bash (1.5 kB)" {
		t.Errorf("tool label %q", l)
	}
}
