package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/internal/textutil"
	openai "github.com/sashabaranov/go-openai"
)

// DefaultModel is the model used when neither OPENAI_MODEL nor a flag names
// one.
const DefaultModel = "gpt-4o-mini"

// DefaultRequestTimeout bounds one HTTP request to the model endpoint.
const DefaultRequestTimeout = 2 * time.Minute

// Environment variables read by ConfigFromEnv.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "OPENAI_MODEL"
	// EnvStream set to off (or 0, false, no) turns streaming off.
	EnvStream = "AGENTBOX_STREAM"
)

// Config configures the OpenAI-compatible model client.
type Config struct {
	APIKey         string
	BaseURL        string // "" = https://api.openai.com/v1
	Model          string // "" = DefaultModel
	RequestTimeout time.Duration
	Retry          RetryPolicy
	// HTTPClient is the transport; nil = a fresh http.Client.
	HTTPClient *http.Client
	// NoStream turns streaming off: every reply is asked for whole. By
	// default replies are streamed (stream: true), and the client falls
	// back to whole replies for the rest of its life when the endpoint
	// refuses a streamed request or answers it with plain JSON.
	NoStream bool
}

// ConfigFromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL
// (flags override the fields afterwards).
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:   strings.TrimSpace(getenv(EnvAPIKey)),
		BaseURL:  strings.TrimSpace(getenv(EnvBaseURL)),
		Model:    strings.TrimSpace(getenv(EnvModel)),
		NoStream: slices.Contains([]string{"off", "0", "false", "no"}, strings.ToLower(strings.TrimSpace(getenv(EnvStream)))),
	}
}

// OpenAI is a Model served by an OpenAI-compatible chat-completions
// endpoint (OpenAI, DeepSeek, Qwen, Ollama, vLLM, ...). It retries
// transient failures per Config.Retry.
type OpenAI struct {
	client  *openai.Client
	model   string
	key     string
	timeout time.Duration
	retry   RetryPolicy
	// stream: replies are asked for as a stream; cleared for good when
	// the endpoint shows it does not stream.
	stream atomic.Bool
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI returns a client for cfg. Without an API key it refuses the
// default OpenAI endpoint (a local endpoint such as Ollama may need none).
func NewOpenAI(cfg Config) (*OpenAI, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, fmt.Errorf("no model API key: set %s (or %s for a local endpoint), or replay a script with --script FILE", EnvAPIKey, EnvBaseURL)
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
			return nil, fmt.Errorf("model base URL %q must start with http:// or https:// (check %s or --base-url)", cfg.BaseURL, EnvBaseURL)
		}
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc.HTTPClient = hintDoer{hc}
	m := &OpenAI{
		client:  openai.NewClientWithConfig(oc),
		model:   cfg.Model,
		key:     cfg.APIKey,
		timeout: cfg.RequestTimeout,
		retry:   cfg.Retry,
	}
	m.stream.Store(!cfg.NoStream)
	if m.model == "" {
		m.model = DefaultModel
	}
	if m.timeout <= 0 {
		m.timeout = DefaultRequestTimeout
	}
	return m, nil
}

// Name is the model name sent to the endpoint.
func (m *OpenAI) Name() string { return m.model }

// Streaming reports whether replies are asked for as a stream (false
// once the endpoint has shown it does not stream).
func (m *OpenAI) Streaming() bool { return m.stream.Load() }

// Complete sends one chat completion, retrying transient failures. It
// streams the reply when it may (see Config.NoStream), telling
// req.OnDelta what arrives.
func (m *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	return m.retry.Do(ctx, func(ctx context.Context) (Response, error) {
		if !m.stream.Load() {
			return m.once(ctx, req)
		}
		return m.streamOnce(ctx, req)
	})
}

func (m *OpenAI) once(ctx context.Context, req Request) (Response, error) {
	rctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	h := &httpHint{}
	rctx = context.WithValue(rctx, hintKey{}, h)
	creq := openai.ChatCompletionRequest{Model: m.model, Messages: req.Messages}
	if len(req.Tools) > 0 {
		creq.Tools = req.Tools
	}
	resp, err := m.client.CreateChatCompletion(rctx, creq)
	if err != nil {
		if ctx.Err() != nil { // the caller gave up: not the endpoint's fault
			return Response{}, context.Cause(ctx)
		}
		if me := m.undecodable(err, h); me != nil {
			return Response{}, me
		}
		return Response{}, m.classify(err, h)
	}
	return m.reply(resp, h.status())
}

// reply is the Response of a whole (not streamed) completion.
func (m *OpenAI) reply(resp openai.ChatCompletionResponse, status int) (Response, error) {
	if len(resp.Choices) == 0 {
		return Response{}, &ModelError{Kind: ErrModelUnavailable, Status: status, Msg: "the reply has no choices"}
	}
	ch := resp.Choices[0]
	msg := ch.Message
	msg.Role = RoleAssistant
	return Response{
		Message:      msg,
		FinishReason: string(ch.FinishReason),
		Usage: Usage{
			PromptTokens:     resp.Usage.PromptTokens,
			CompletionTokens: resp.Usage.CompletionTokens,
			TotalTokens:      resp.Usage.TotalTokens,
		},
	}, nil
}

// classify turns a go-openai error into a *ModelError.
func (m *OpenAI) classify(err error, h *httpHint) error {
	me := &ModelError{Kind: ErrModelUnavailable, RetryAfter: h.retryAfter()}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		me.Status = apiErr.HTTPStatusCode
		me.Msg = apiErr.Message
	case errors.As(err, &reqErr):
		me.Status = reqErr.HTTPStatusCode
		me.Msg = http.StatusText(reqErr.HTTPStatusCode)
		if b := strings.TrimSpace(string(reqErr.Body)); b != "" {
			me.Msg = b
		}
	case errors.Is(err, context.DeadlineExceeded):
		me.Msg = fmt.Sprintf("no answer within %s", m.timeout)
	default:
		me.Status = h.status()
		me.Msg = err.Error()
	}
	me.Msg = m.redact(textutil.Clip(me.Msg, 300))
	switch s := me.Status; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		me.Kind = ErrModelAuth
		me.Hint = "check " + EnvAPIKey + " (and " + EnvBaseURL + " if you use another provider)"
	case s == http.StatusNotFound:
		me.Kind = ErrModelRequest
		me.Hint = fmt.Sprintf("check the model name %q (%s, --model) and the base URL (%s)", m.model, EnvModel, EnvBaseURL)
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500:
		me.Kind = ErrModelUnavailable
	case s >= 400:
		me.Kind = ErrModelRequest
		me.Hint = "the endpoint does not accept this request; check the model name and that it supports tool calls (and streaming: --no-stream or " + EnvStream + "=off turns it off)"
	}
	return me
}

func (m *OpenAI) redact(s string) string {
	if len(m.key) >= 4 {
		s = strings.ReplaceAll(s, m.key, "[REDACTED]")
	}
	return s
}

// hintDoer records the status and Retry-After header of each response in
// the *httpHint found in the request's context: go-openai's errors do not
// carry headers.
type hintDoer struct{ c *http.Client }

type hintKey struct{}

type httpHint struct {
	mu     sync.Mutex
	code   int
	header http.Header
	at     time.Time
	body   *cappedBuffer // the start of a 2xx body, to explain a reply that does not decode
	// stream is set for a streamed request: sse watches its body for
	// [DONE], and raw is the body, to read a plain JSON reply in full.
	stream bool
	sse    *sseWatch
	raw    io.Reader
}

func (d hintDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if h, ok := req.Context().Value(hintKey{}).(*httpHint); ok && resp != nil {
		h.mu.Lock()
		h.code, h.header, h.at = resp.StatusCode, resp.Header.Clone(), time.Now()
		if resp.StatusCode/100 == 2 && resp.Body != nil {
			h.body = &cappedBuffer{max: maxKeptBody}
			var w io.Writer = h.body
			if h.stream {
				h.sse = &sseWatch{}
				w = io.MultiWriter(h.body, h.sse)
			}
			resp.Body = teeBody{resp.Body, w}
			h.raw = resp.Body
		}
		h.mu.Unlock()
	}
	return resp, err
}

func (h *httpHint) status() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.code
}

// retryAfter parses retry-after-ms or Retry-After (seconds or HTTP date).
func (h *httpHint) retryAfter() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.header == nil {
		return 0
	}
	if v := h.header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(h.at); d > 0 {
			return d
		}
	}
	return 0
}
