package agent_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/agent/agenttest"
)

// sleeps records the backoff waits instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func newClient(t testing.TB, srv *agenttest.Server, sl *sleeps) *agent.OpenAI {
	t.Helper()
	cfg := agent.Config{APIKey: testKey, BaseURL: srv.URL(), Model: "test-model",
		Retry: agent.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 8 * time.Millisecond}}
	if sl != nil {
		cfg.Retry.Sleep = sl.sleep
	}
	m, err := agent.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": " k ", "OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_MODEL": "qwen"}
	c := agent.ConfigFromEnv(func(k string) string { return env[k] })
	if c.APIKey != "k" || c.BaseURL != "http://localhost:11434/v1" || c.Model != "qwen" {
		t.Errorf("config = %+v", c)
	}
	if _, err := agent.NewOpenAI(agent.Config{}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	m, err := agent.NewOpenAI(agent.Config{APIKey: "k"})
	if err != nil || m.Name() != agent.DefaultModel {
		t.Errorf("default model: %v %v", m, err)
	}
	if _, err := agent.NewOpenAI(agent.Config{APIKey: "k", BaseURL: "localhost:8080"}); err == nil {
		t.Error("base URL without scheme accepted")
	}
}

func TestOpenAIRequestAndResponse(t *testing.T) {
	srv := agenttest.New(t, agenttest.Reply{ToolCalls: []agenttest.Call{agenttest.Bash("ls"), agenttest.Read("a.txt")}, PromptTokens: 100, CompletionTokens: 7})
	m := newClient(t, srv, nil)
	tools, _, _ := newTools(t)
	resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}, Tools: tools.Definitions()})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Function.Name != "read_file" || resp.FinishReason != "tool_calls" ||
		resp.Usage.PromptTokens != 100 || resp.Usage.CompletionTokens != 7 || resp.Usage.TotalTokens != 107 || resp.Attempts != 1 {
		t.Errorf("response = %+v", resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Header.Get("Authorization") != "Bearer "+testKey || r.Request.Model != "test-model" || len(r.Request.Tools) != 3 {
		t.Errorf("request = %+v", r.Request)
	}
	if !strings.Contains(string(r.Body), `"additionalProperties":false`) {
		t.Errorf("schemas not sent: %s", r.Body)
	}
}

func TestOpenAIRetries(t *testing.T) {
	t.Run("429 with Retry-After then success", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Reply{Status: 429, RetryAfter: "2", Error: "slow down"}, agenttest.Reply{Status: 429, RetryAfter: "3600"}, agenttest.Answer("hello"))
		sl := &sleeps{}
		var retries []int
		m := newClientRetry(t, srv, sl, func(a int, _ time.Duration, _ error) { retries = append(retries, a) })
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil || resp.Message.Content != "hello" || resp.Attempts != 3 {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		if len(sl.d) != 2 || sl.d[0] != 2*time.Second || sl.d[1] != agent.DefaultMaxRetryAfter {
			t.Errorf("waits = %v, want [2s, capped %s]", sl.d, agent.DefaultMaxRetryAfter)
		}
		if len(retries) != 2 {
			t.Errorf("OnRetry calls = %v", retries)
		}
	})
	t.Run("500 until the retries run out", func(t *testing.T) {
		var replies []agenttest.Reply
		for range 10 {
			replies = append(replies, agenttest.Reply{Status: 500, Error: "boom"})
		}
		srv := agenttest.New(t, replies...)
		sl := &sleeps{}
		m := newClient(t, srv, sl)
		_, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		var me *agent.ModelError
		if !errors.Is(err, agent.ErrModelUnavailable) || !errors.As(err, &me) || me.Attempts != agent.DefaultMaxAttempts || me.Status != 500 {
			t.Fatalf("err = %v", err)
		}
		if srv.Served() != agent.DefaultMaxAttempts || len(sl.d) != agent.DefaultMaxAttempts-1 {
			t.Errorf("served %d, waits %v", srv.Served(), sl.d)
		}
		for i, d := range sl.d { // exponential with jitter in [d/2, d], capped at 8ms
			hi := min(time.Millisecond<<i, 8*time.Millisecond)
			if d < hi/2 || d > hi {
				t.Errorf("wait %d = %s, want in [%s, %s]", i, d, hi/2, hi)
			}
		}
		if !strings.Contains(err.Error(), "after 5 attempts") || !strings.Contains(err.Error(), "boom") {
			t.Errorf("message = %v", err)
		}
	})
	t.Run("network error is retried", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Reply{Body: "{not json"}, agenttest.Answer("ok"))
		m := newClient(t, srv, &sleeps{})
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil || resp.Message.Content != "ok" {
			t.Fatalf("resp %+v err %v", resp, err)
		}
	})
	for _, c := range []struct {
		status int
		kind   error
		hint   string
	}{
		{401, agent.ErrModelAuth, "OPENAI_API_KEY"},
		{403, agent.ErrModelAuth, "OPENAI_API_KEY"},
		{400, agent.ErrModelRequest, "tool calls"},
		{404, agent.ErrModelRequest, "model name"},
	} {
		t.Run(http.StatusText(c.status)+" is not retried", func(t *testing.T) {
			srv := agenttest.New(t, agenttest.Reply{Status: c.status, Error: "Incorrect API key provided: " + testKey}, agenttest.Answer("never"))
			sl := &sleeps{}
			m := newClient(t, srv, sl)
			_, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			if !errors.Is(err, c.kind) || srv.Served() != 1 || len(sl.d) != 0 {
				t.Fatalf("err %v served %d", err, srv.Served())
			}
			if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), c.hint) {
				t.Errorf("message = %v", err)
			}
		})
	}
	t.Run("per-request timeout", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Reply{Delay: 5 * time.Second, Content: "late"}, agenttest.Answer("ok"))
		m, err := agent.NewOpenAI(agent.Config{APIKey: testKey, BaseURL: srv.URL(), RequestTimeout: 50 * time.Millisecond,
			Retry: agent.RetryPolicy{Sleep: (&sleeps{}).sleep}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil || resp.Message.Content != "ok" || resp.Attempts != 2 {
			t.Fatalf("resp %+v err %v", resp, err)
		}
	})
	t.Run("caller cancellation is not retried", func(t *testing.T) {
		srv := agenttest.New(t, agenttest.Reply{Delay: 5 * time.Second, Content: "late"})
		m := newClient(t, srv, &sleeps{})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := m.Complete(ctx, agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if !errors.Is(err, context.DeadlineExceeded) || srv.Served() != 1 {
			t.Fatalf("err %v served %d", err, srv.Served())
		}
	})
}

func newClientRetry(t testing.TB, srv *agenttest.Server, sl *sleeps, on func(int, time.Duration, error)) *agent.OpenAI {
	t.Helper()
	m, err := agent.NewOpenAI(agent.Config{APIKey: testKey, BaseURL: srv.URL(),
		Retry: agent.RetryPolicy{BaseDelay: time.Millisecond, Sleep: sl.sleep, OnRetry: on}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
