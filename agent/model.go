// Package agent runs the agentbox loop: it asks a model (an OpenAI-compatible
// chat-completions endpoint, or a scripted replay) what to do next, and
// carries out each tool call the model makes — execute_bash, read_file,
// write_file — inside a sandbox session, after the policy (and, when the
// policy says ask, an approver) has allowed it. Every call is recorded in the
// audit log before it runs and again with its result.
//
// The pieces, one file each: Model and its implementations (openai.go,
// openai_stream.go and the stream assembler stream.go, scripted.go,
// retry.go), the tool definitions and the call pipeline
// (tools.go, registry.go), the loop (loop.go) with its context budget
// (budget.go), approvals (approve.go), planning (plan.go), per-workspace
// memory (memory.go), project instructions and the system prompt
// (prompt.go), terminal output (printer.go) and workspace snapshots
// (snapshot.go).
package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Message is one chat message; the go-openai type is used throughout.
type Message = openai.ChatCompletionMessage

// Chat roles.
const (
	RoleSystem    = openai.ChatMessageRoleSystem
	RoleUser      = openai.ChatMessageRoleUser
	RoleAssistant = openai.ChatMessageRoleAssistant
	RoleTool      = openai.ChatMessageRoleTool
)

// Request is one chat completion request.
type Request struct {
	Messages []Message
	Tools    []openai.Tool
	// Step is the loop's step number (0 for the planning call); models may
	// use it in diagnostics.
	Step int
	// OnDelta, when set, is told what a streamed reply delivers as it
	// arrives (it runs on the caller's goroutine, and should be quick).
	OnDelta func(Delta)
}

// Usage counts the tokens of one completion.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Response is the model's reply.
type Response struct {
	Message      Message // role assistant; Content and/or ToolCalls
	FinishReason string
	Usage        Usage
	Attempts     int // HTTP attempts it took (1 without retries)
}

// Model is one chat completion. Implementations: *OpenAI (HTTP) and
// *Scripted (a YAML replay).
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Errors of model calls; the CLI maps all of them to exit code 1. Test with
// errors.Is; *ModelError carries the details.
var (
	// ErrModelAuth: the endpoint rejected the API key (401, 403).
	ErrModelAuth = errors.New("model endpoint rejected the API key")
	// ErrModelRequest: the endpoint rejected the request (400, 404, 413,
	// 422, ...): wrong model name, wrong base URL, unsupported feature.
	ErrModelRequest = errors.New("model endpoint rejected the request")
	// ErrModelUnavailable: the endpoint kept failing (429, 5xx, network
	// errors, timeouts) until the retries ran out.
	ErrModelUnavailable = errors.New("model endpoint unavailable")
	// ErrScriptExhausted: a scripted model has no turn left.
	ErrScriptExhausted = errors.New("scripted model has no turns left")
	// ErrEmptyReply: the model answered with neither content nor tool calls,
	// twice in a row.
	ErrEmptyReply = errors.New("model gave an empty reply")
)

// ModelError describes a failed model call.
type ModelError struct {
	Kind       error         // ErrModelAuth, ErrModelRequest, ErrModelUnavailable or ErrModelReply
	Status     int           // HTTP status; 0 for network errors
	Attempts   int           // attempts made
	RetryAfter time.Duration // the endpoint's Retry-After, if any
	Msg        string        // what the endpoint said (secrets redacted)
	Hint       string        // what to do
	// Calls are the tool calls of a reply that could not be used
	// (ErrModelReply): none ran; the loop records each as refused.
	Calls []RefusedCall
}

func (e *ModelError) Error() string {
	s := e.Kind.Error()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Unwrap makes errors.Is(err, ErrModelAuth) and friends work.
func (e *ModelError) Unwrap() error { return e.Kind }

// retryable reports whether another attempt may succeed.
func (e *ModelError) retryable() bool { return e.Kind == ErrModelUnavailable }
