// Package agenttest provides a fake OpenAI-compatible chat-completions
// server for tests: it answers POST /v1/chat/completions with scripted
// replies (assistant content, tool calls, usage) or scripted failures (429
// with Retry-After, 5xx, 401, malformed bodies), as SSE chunks when the
// request streams (stream: true), and records every request
// so tests can check what the real go-openai client sent.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer of the server.
type Reply struct {
	Content      string
	ToolCalls    []Call
	FinishReason string // default "stop", or "tool_calls" with tool calls
	// PromptTokens and CompletionTokens are reported in usage (defaults:
	// bytes of the request / 4, and 10).
	PromptTokens, CompletionTokens int

	// Status, when not 0 or 200, makes the reply an error with this HTTP
	// status and an OpenAI-style error body carrying Error.
	Status     int
	Error      string
	RetryAfter string // Retry-After header value
	// Body, when set, is sent verbatim (with Status, default 200).
	Body string
	// Delay is waited before answering (the request's context ends it).
	Delay time.Duration

	// To a streamed request (stream: true) the reply is sent as SSE
	// chunks: content and tool-call arguments cut every ChunkBytes bytes
	// (default 5; never inside a character), the fragments of several
	// tool calls interleaved when Interleave is set, usage in a last
	// chunk when the request asked for it, then data: [DONE]. Cut ends
	// the stream half-way (no finish_reason, no [DONE]); Stream, when
	// set, is sent verbatim as the SSE body. Body is sent as it is to a
	// streamed request too (a plain JSON answer).
	ChunkBytes int
	Interleave bool
	Cut        bool
	Stream     string
}

// Call is one tool call of a Reply. Args is sent verbatim as the
// function's arguments string, so it may be malformed JSON.
type Call struct {
	ID, Name, Args string
}

// Bash is an execute_bash call.
func Bash(command string) Call { return Call{Name: "execute_bash", Args: jsonArgs("command", command)} }

// Read is a read_file call.
func Read(path string) Call { return Call{Name: "read_file", Args: jsonArgs("path", path)} }

// Write is a write_file call.
func Write(path, content string) Call {
	return Call{Name: "write_file", Args: jsonArgs("path", path, "content", content)}
}

// Answer is a final answer.
func Answer(s string) Reply { return Reply{Content: s} }

// Tools is a reply made of tool calls.
func Tools(calls ...Call) Reply { return Reply{ToolCalls: calls} }

func jsonArgs(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Recorded is one request the server received.
type Recorded struct {
	Header  http.Header
	Body    []byte
	Request openai.ChatCompletionRequest
}

// Server is the fake endpoint. Its zero value is not usable; call New.
type Server struct {
	srv *httptest.Server
	// Key, when set, is the API key the server expects; requests with
	// another bearer token get 401.
	Key string
	// RejectStream answers every streamed request with 400 (an endpoint
	// that does not stream); PlainToStream answers them with plain JSON
	// (one that ignores stream: true). Set them before the first request.
	RejectStream, PlainToStream bool

	mu      sync.Mutex
	replies []Reply
	reqs    []Recorded
	served  int
}

// New starts a server with replies; it is closed when the test ends.
func New(t testing.TB, replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure the client with (…/v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Push appends replies.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.reqs...)
}

// Served is the number of scripted replies used.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "invalid_request_error", "agenttest: unknown endpoint "+r.Method+" "+r.URL.Path)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Recorded{Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &rec.Request)
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return
	}
	if s.served >= len(s.replies) {
		n := len(s.replies)
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("agenttest: all %d scripted replies were used", n))
		return
	}
	if rec.Request.Stream && s.RejectStream {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "stream is not supported")
		return
	}
	rep := s.replies[s.served]
	s.served++
	s.mu.Unlock()

	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	if rep.Stream != "" && rec.Request.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, rep.Stream)
		return
	}
	if rep.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		if rep.Status != 0 {
			w.WriteHeader(rep.Status)
		}
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		msg := rep.Error
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		writeError(w, rep.Status, "server_error", msg)
		return
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: rep.Content}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", s.Served(), i)
		}
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}})
	}
	fr := rep.FinishReason
	if fr == "" {
		fr = "stop"
		if len(msg.ToolCalls) > 0 {
			fr = "tool_calls"
		}
	}
	pt, ct := rep.PromptTokens, rep.CompletionTokens
	if pt == 0 {
		pt = len(body) / 4
	}
	if ct == 0 {
		ct = 10
	}
	if rec.Request.Stream && !s.PlainToStream {
		var usage *openai.Usage
		if o := rec.Request.StreamOptions; o != nil && o.IncludeUsage {
			usage = &openai.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}
		}
		writeStream(w, rep, msg, fr, usage)
		return
	}
	resp := openai.ChatCompletionResponse{
		ID: fmt.Sprintf("chatcmpl-%d", s.Served()), Object: "chat.completion", Created: time.Now().Unix(),
		Model:   rec.Request.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: openai.FinishReason(fr)}},
		Usage:   openai.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
