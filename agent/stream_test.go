package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// deltas records what OnDelta is told.
type deltas struct {
	mu sync.Mutex
	d  []agent.Delta
}

func (r *deltas) on(d agent.Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = append(r.d, d)
}

func (r *deltas) text() (s string, pieces int, failed, ended int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.d {
		if d.Text != "" {
			s += d.Text
			pieces++
		}
		if d.Failed {
			failed++
		}
		if d.End {
			ended++
		}
	}
	return
}

func hi() []agent.Message { return []agent.Message{{Role: agent.RoleUser, Content: "hi"}} }

// TestStreamAssemblesSplitInterleavedToolCalls: the real go-openai client
// streams (stream: true, include_usage) and the reply's content and tool
// calls, their arguments cut at odd byte boundaries and the calls'
// fragments interleaved, come out whole, in order, with the usage of the
// last chunk.
func TestStreamAssemblesSplitInterleavedToolCalls(t *testing.T) {
	calls := []agenttest.Call{
		{ID: "call_a", Name: "execute_bash", Args: `{"command":"printf 'é\"x\"\\n' | wc -c"}`},
		agenttest.Read("src/ünïcode.txt"),
		{ID: "call_c", Name: "write_file", Args: `{"path":"a.txt","content":"line 1\nline 2 — ✓\n"}`},
	}
	for _, size := range []int{1, 2, 3, 7, 13, 1000} {
		for _, inter := range []bool{false, true} {
			srv := agenttest.New(t, agenttest.Reply{Content: "Let me look — ok.", ToolCalls: calls, ChunkBytes: size, Interleave: inter, PromptTokens: 40, CompletionTokens: 9})
			m := newClient(t, srv, &sleeps{})
			rec := &deltas{}
			resp, err := m.Complete(context.Background(), agent.Request{Messages: hi(), OnDelta: rec.on})
			if err != nil {
				t.Fatalf("size %d interleave %v: %v", size, inter, err)
			}
			got := resp.Message.ToolCalls
			if len(got) != 3 || resp.Message.Content != "Let me look — ok." || resp.FinishReason != "tool_calls" ||
				resp.Usage != (agent.Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49}) {
				t.Fatalf("size %d interleave %v: %+v", size, inter, resp)
			}
			for i, c := range calls {
				if got[i].Function.Name != c.Name || got[i].Function.Arguments != c.Args || got[i].ID == "" || (c.ID != "" && got[i].ID != c.ID) {
					t.Errorf("size %d interleave %v: call %d = %+v, want %+v", size, inter, i, got[i], c)
				}
			}
			req := srv.Requests()[0].Request
			if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
				t.Errorf("the request did not stream with include_usage: %+v", req)
			}
			text, pieces, failed, ended := rec.text()
			if text != "Let me look — ok." || (size < 5 && pieces < 4) || failed != 0 || ended != 1 {
				t.Errorf("size %d: deltas %q in %d pieces, %d failed, %d ended", size, text, pieces, failed, ended)
			}
		}
	}
}

// TestStreamVariants: streams as other endpoints send them: continuation
// chunks found by id (no index), every call numbered 0 with its own id,
// a name sent in pieces, [DONE] without a finish_reason, a finish_reason
// without [DONE], and a length cut-off that stays a length cut-off.
func TestStreamVariants(t *testing.T) {
	sse := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString("data: " + l + "\n\n")
		}
		return b.String()
	}
	for _, c := range []struct {
		name, stream     string
		finish, content  string
		calls            []string // name|args
		prompt, complete int
	}{
		{name: "by id, no index", stream: sse(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"execute_bash","arguments":"{\"comm"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"arguments":"th\":\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"arguments":"and\":\"ls\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			finish: "tool_calls", calls: []string{`read_file|{"path":"x"}`, `execute_bash|{"command":"ls"}`}},
		{name: "every call index 0", stream: sse(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"read_file","arguments":"{\"path\":\"y\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			finish: "tool_calls", calls: []string{`read_file|{"path":"x"}`, `read_file|{"path":"y"}`}},
		{name: "name in pieces, no finish_reason, [DONE]", stream: sse(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"file","arguments":"{}"}}]}}]}`, `[DONE]`),
			finish: "tool_calls", calls: []string{`read_file|{}`}},
		{name: "finish_reason without [DONE], usage", stream: sse(
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"fin"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"e"},"finish_reason":"stop"}],"usage":null}`,
			`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}`),
			finish: "stop", content: "fine", prompt: 12, complete: 2},
		{name: "length", stream: sse(
			`{"choices":[{"index":0,"delta":{"content":"The answer is"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, `[DONE]`),
			finish: "length", content: "The answer is"},
		{name: "keep-alive comments and other choices", stream: ": keep-alive\n\n" + sse(
			`{"choices":[{"index":1,"delta":{"content":"other"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"mine"},"finish_reason":"stop"}]}`, `[DONE]`),
			finish: "stop", content: "mine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := agenttest.New(t, agenttest.Reply{Stream: c.stream})
			resp, err := newClient(t, srv, &sleeps{}).Complete(context.Background(), agent.Request{Messages: hi()})
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != c.finish || resp.Message.Content != c.content || len(resp.Message.ToolCalls) != len(c.calls) ||
				resp.Usage.PromptTokens != c.prompt || resp.Usage.CompletionTokens != c.complete {
				t.Fatalf("resp %+v", resp)
			}
			for i, want := range c.calls {
				tc := resp.Message.ToolCalls[i]
				if got := tc.Function.Name + "|" + tc.Function.Arguments; got != want {
					t.Errorf("call %d = %s, want %s", i, got, want)
				}
			}
		})
	}
}

// TestStreamCutIsRetriedNeverAnAnswer: a stream that ends with neither a
// finish_reason nor [DONE] is a transient model error: retried, and what
// it delivered is voided; cut every time, the run fails with no answer.
func TestStreamCutIsRetriedNeverAnAnswer(t *testing.T) {
	srv := agenttest.New(t, agenttest.Reply{Content: "The whole answer is long", Cut: true, ChunkBytes: 3}, agenttest.Answer("complete"))
	rec := &deltas{}
	resp, err := newClient(t, srv, &sleeps{}).Complete(context.Background(), agent.Request{Messages: hi(), OnDelta: rec.on})
	if err != nil || resp.Message.Content != "complete" || resp.Attempts != 2 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if _, _, failed, ended := rec.text(); failed != 1 || ended != 1 {
		t.Errorf("deltas: %d failed, %d ended; want the cut attempt voided", failed, ended)
	}

	var cuts []agenttest.Reply
	for range agent.DefaultMaxAttempts {
		cuts = append(cuts, agenttest.Reply{Content: "Done: all of it", Cut: true, ChunkBytes: 4})
	}
	srv = agenttest.New(t, cuts...)
	res, recs, _, err := runAgainst(t, srv)
	if !errors.Is(err, agent.ErrModelUnavailable) || res.Status == agent.StatusOK || res.Answer != "" || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("res %+v err %v; want a model error and no answer", res, err)
	}
	if srv.Served() != agent.DefaultMaxAttempts {
		t.Errorf("served %d, want every attempt", srv.Served())
	}
	for _, r := range recs {
		if r.Event == audit.EventModelCall {
			t.Errorf("a cut stream was recorded as a model call: %+v", r)
		}
	}
}

// TestStreamMalformedChunks: a chunk that is not JSON is a retried model
// error that says which chunk; a chunk of the wrong shape (arguments as an
// object) is not retried, and its tool call is recorded as refused, with
// the arguments assembled from every chunk.
func TestStreamMalformedChunks(t *testing.T) {
	srv := agenttest.New(t, agenttest.Reply{Stream: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\": [oops\n\n"}, agenttest.Answer("ok"))
	var msgs []string
	m := newClientRetry(t, srv, &sleeps{}, func(_ int, _ time.Duration, err error) { msgs = append(msgs, err.Error()) })
	resp, err := m.Complete(context.Background(), agent.Request{Messages: hi()})
	if err != nil || resp.Message.Content != "ok" || len(msgs) != 1 || !strings.Contains(msgs[0], "streamed chunk 2 is not JSON") {
		t.Fatalf("resp %+v err %v retries %q", resp, err, msgs)
	}

	wrong := "data: " + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"execute_bash","arguments":"{\"command\":"}}]}}]}` + "\n\n" +
		"data: " + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"x":1}}}]}}]}` + "\n\n" +
		"data: " + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"rm -rf /\"}"}}]}}]}` + "\n\n" +
		"data: " + `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	srv = agenttest.New(t, agenttest.Reply{Stream: wrong}, agenttest.Answer("never"))
	res, recs, fs, err := runAgainst(t, srv)
	var me *agent.ModelError
	if !errors.Is(err, agent.ErrModelReply) || !errors.As(err, &me) || !strings.Contains(me.Msg, "streamed chunk 2") || res.Status == agent.StatusOK {
		t.Fatalf("res %+v err %v", res, err)
	}
	if srv.Served() != 1 || len(fs.commands()) != 0 {
		t.Errorf("served %d, ran %v", srv.Served(), fs.commands())
	}
	var refused *audit.Record
	for i, r := range recs {
		if r.Event == audit.EventToolCall && r.Rule == agent.RuleBadReply {
			refused = &recs[i]
		}
	}
	if refused == nil || refused.Tool != "execute_bash" || fmt.Sprint(refused.Args["arguments"]) != `{"command":{"x":1}"rm -rf /"}` {
		t.Errorf("the call is not recorded refused with its arguments: %+v", refused)
	}
}

// TestStreamFallbacks: an endpoint that refuses streaming (400 naming
// stream) is asked again without it, and one that answers plain JSON to
// a streamed request is read as it is; either way the client stops
// streaming. NoStream never streams; another 400 is not asked again.
func TestStreamFallbacks(t *testing.T) {
	t.Run("400", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Answer("one"), agenttest.Answer("two"))
		srv.RejectStream = true
		m := newClient(t, srv, &sleeps{})
		for _, want := range []string{"one", "two"} {
			resp, err := m.Complete(context.Background(), agent.Request{Messages: hi()})
			if err != nil || resp.Message.Content != want {
				t.Fatalf("resp %+v err %v", resp, err)
			}
		}
		if st := streamed(srv); st != "yes no no" || m.Streaming() {
			t.Errorf("streamed requests: %s, streaming %v", st, m.Streaming())
		}
	})
	t.Run("plain JSON", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Tools(agenttest.Bash("ls")), agenttest.Answer("two"))
		srv.PlainToStream = true
		m := newClient(t, srv, &sleeps{})
		resp, err := m.Complete(context.Background(), agent.Request{Messages: hi()})
		if err != nil || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Function.Arguments != `{"command":"ls"}` || resp.Attempts != 1 {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		if _, err := m.Complete(context.Background(), agent.Request{Messages: hi()}); err != nil {
			t.Fatal(err)
		}
		if st := streamed(srv); st != "yes no" || m.Streaming() {
			t.Errorf("streamed requests: %s", st)
		}
	})
	t.Run("NoStream", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Answer("one"))
		m, err := agent.NewOpenAI(agent.Config{APIKey: testKey, BaseURL: srv.URL(), NoStream: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Complete(context.Background(), agent.Request{Messages: hi()}); err != nil || streamed(srv) != "no" {
			t.Fatalf("err %v streamed %s", err, streamed(srv))
		}
		c := agent.ConfigFromEnv(func(k string) string { return map[string]string{agent.EnvStream: "Off"}[k] })
		if !c.NoStream {
			t.Errorf("%s=Off does not turn streaming off", agent.EnvStream)
		}
	})
	t.Run("another 400", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Reply{Status: 400, Error: "context length exceeded"}, agenttest.Answer("never"))
		m := newClient(t, srv, &sleeps{})
		if _, err := m.Complete(context.Background(), agent.Request{Messages: hi()}); !errors.Is(err, agent.ErrModelRequest) || srv.Served() != 1 || !m.Streaming() {
			t.Fatalf("err %v served %d", err, srv.Served())
		}
	})
}

func streamed(srv *agenttest.Server) string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Request.Stream {
			out = append(out, "yes")
		} else {
			out = append(out, "no")
		}
	}
	return strings.Join(out, " ")
}

// TestStreamJSONEventsRedactWhole: --json-events shows a streamed reply
// as it arrives, and a secret cut into one-byte chunks is redacted whole
// in the model_delta events.
func TestStreamJSONEventsRedactWhole(t *testing.T) {
	text := "first line\nthe key is " + testKey + " and more\nlast"
	srv := agenttest.New(t, agenttest.Reply{Content: text, ChunkBytes: 1})
	tools, _, _ := newTools(t)
	out := &testutil.LockedBuffer{}
	ev := &agent.JSONEvents{W: out, Redact: tools.Redact}
	cfg := runCfg(t, tools, newClient(t, srv, &sleeps{}), "task")
	cfg.Events = ev
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), testKey) || strings.Contains(out.String(), testKey[:12]) {
		t.Fatalf("the key leaked into the events: %s", out.String())
	}
	var got strings.Builder
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e struct{ Event, Text string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == "model_delta" {
			got.WriteString(e.Text)
			n++
		}
	}
	if n < 2 || got.String() != "first line\nthe key is [REDACTED] and more\nlast" {
		t.Errorf("model_delta events (%d): %q", n, got.String())
	}
}
