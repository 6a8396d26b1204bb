package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/textutil"
	openai "github.com/sashabaranov/go-openai"
)

// Bounds of one streamed reply: past them the reply is refused (a model
// error), not assembled without limit.
const (
	maxStreamBytes = 32 << 20 // text and tool-call arguments together
	maxStreamCalls = 1024     // tool calls
)

// Delta is what one chunk of a streamed reply added; Request.OnDelta is
// told about each, in order. A Failed delta voids what the attempt
// delivered (a retry may follow); an End delta says the reply is
// complete.
type Delta struct {
	Text     string // content that arrived
	Tool     string // the name of a tool call that began to arrive
	ArgBytes int    // tool-call argument bytes that arrived
	Failed   bool   // the attempt failed: forget its deltas
	End      bool   // the reply is complete
}

// streamAssembler builds one Response from the data payloads of a
// streamed chat completion (choice 0): the content, and the tool calls
// whose id, name and arguments arrive split over many chunks, several of
// them interleaved, each found by its index (or, without one, by its id,
// or else the last call). It is not safe for concurrent use.
type streamAssembler struct {
	content, reasoning, refusal strings.Builder
	calls                       []openai.ToolCall // in order of first appearance
	byIndex                     map[int]int       // index → position in calls
	finish                      string
	usage                       *openai.Usage
	chunks                      int
	bytes                       int
	wrong                       string // why the reply cannot be used ("" = it can)
}

func newStreamAssembler() *streamAssembler { return &streamAssembler{byIndex: map[int]int{}} }

// add takes one chunk's JSON payload and returns what it added. A payload
// that is not JSON is an ErrModelUnavailable (a transient fault of the
// endpoint or the way: retried); JSON of the wrong shape marks the reply
// unusable (see result) and its tool calls are read leniently.
func (a *streamAssembler) add(data []byte) (Delta, error) {
	a.chunks++
	var c openai.ChatCompletionStreamResponse
	if err := json.Unmarshal(data, &c); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return Delta{}, &ModelError{Kind: ErrModelUnavailable,
				Msg: fmt.Sprintf("streamed chunk %d is not JSON (%v): %q", a.chunks, err, textutil.Clip(string(data), 120))}
		}
		if a.wrong == "" {
			a.wrong = fmt.Sprintf("streamed chunk %d: field %q is a JSON %s where the chat-completions API has a %s", a.chunks, te.Field, te.Value, te.Type)
		}
		return a.addLenient(data)
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	var d Delta
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one reply was asked for (n = 1)
		}
		dl := ch.Delta
		d.Text += dl.Content
		a.content.WriteString(dl.Content)
		a.reasoning.WriteString(dl.ReasoningContent)
		a.refusal.WriteString(dl.Refusal)
		a.bytes += len(dl.Content) + len(dl.ReasoningContent) + len(dl.Refusal)
		for _, tc := range dl.ToolCalls {
			if err := a.addCall(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments, &d); err != nil {
				return d, err
			}
		}
		if ch.FinishReason != "" {
			a.finish = string(ch.FinishReason)
		}
	}
	if a.bytes > maxStreamBytes {
		return d, a.refuse(fmt.Sprintf("the streamed reply is larger than %d MiB", maxStreamBytes>>20))
	}
	return d, nil
}

// addCall adds one tool-call fragment.
func (a *streamAssembler) addCall(index *int, id, name, args string, d *Delta) error {
	pos := -1
	switch {
	case index != nil:
		if p, ok := a.byIndex[*index]; ok {
			pos = p
		}
	case id != "":
		for i := range a.calls {
			if a.calls[i].ID == id {
				pos = i
			}
		}
	case len(a.calls) > 0:
		pos = len(a.calls) - 1
	}
	if pos >= 0 && id != "" && a.calls[pos].ID != "" && a.calls[pos].ID != id {
		pos = -1 // a new call under an index already used (some endpoints number every call 0)
	}
	if pos < 0 {
		if len(a.calls) >= maxStreamCalls {
			return a.refuse(fmt.Sprintf("the streamed reply has more than %d tool calls", maxStreamCalls))
		}
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
		pos = len(a.calls) - 1
		if index != nil {
			a.byIndex[*index] = pos
		}
	}
	tc := &a.calls[pos]
	if tc.ID == "" {
		tc.ID = id
	}
	switch {
	case name == "" || name == tc.Function.Name:
	case tc.Function.Name == "":
		tc.Function.Name = name
		d.Tool = name
	default:
		tc.Function.Name += name // a name sent in pieces
	}
	tc.Function.Arguments += args
	d.ArgBytes += len(args)
	a.bytes += len(id) + len(name) + len(args)
	return nil
}

// refuse marks the reply unusable and returns the error that says so.
func (a *streamAssembler) refuse(why string) error {
	a.wrong = why
	return a.replyError()
}

func (a *streamAssembler) replyError() *ModelError {
	me := &ModelError{Kind: ErrModelReply, Msg: textutil.Clip(a.wrong, 300),
		Hint: "the endpoint's stream is not OpenAI-compatible for this model; try another model or endpoint, or turn streaming off (--no-stream)"}
	for _, tc := range a.calls {
		me.Calls = append(me.Calls, RefusedCall{ID: textutil.Clip(tc.ID, 100), Name: textutil.Clip(tc.Function.Name, 100), Args: tc.Function.Arguments})
	}
	return me
}

// addLenient reads the tool calls of a chunk of the wrong shape: any
// JSON for the id and name, arguments as a string or any JSON value.
func (a *streamAssembler) addLenient(data []byte) (Delta, error) {
	var c struct {
		Choices []struct {
			Index json.RawMessage `json:"index"`
			Delta struct {
				ToolCalls []struct {
					Index    json.RawMessage `json:"index"`
					ID       any             `json:"id"`
					Function struct {
						Name      any             `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	var d Delta
	if json.Unmarshal(data, &c) != nil {
		return d, nil
	}
	for _, ch := range c.Choices {
		if i, ok := rawInt(ch.Index); ok && i != 0 {
			continue
		}
		for _, tc := range ch.Delta.ToolCalls {
			var index *int
			if i, ok := rawInt(tc.Index); ok {
				index = &i
			}
			args := string(tc.Function.Arguments)
			var s string
			if json.Unmarshal(tc.Function.Arguments, &s) == nil {
				args = s
			}
			if err := a.addCall(index, fmt.Sprint(orEmpty(tc.ID)), fmt.Sprint(orEmpty(tc.Function.Name)), args, &d); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

func rawInt(b json.RawMessage) (int, bool) {
	i, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return i, err == nil
}

// result is the assembled reply. done reports whether the stream ended
// with [DONE]: a stream that ended with neither [DONE] nor a
// finish_reason was cut off, and is an ErrModelUnavailable (retried),
// never a complete answer.
func (a *streamAssembler) result(done bool) (Response, error) {
	if a.finish == "" && !done {
		return Response{}, &ModelError{Kind: ErrModelUnavailable,
			Msg: fmt.Sprintf("the streamed reply was cut off after %d chunks (no finish_reason, no [DONE])", a.chunks)}
	}
	if a.wrong != "" {
		return Response{}, a.replyError()
	}
	msg := Message{Role: RoleAssistant, Content: a.content.String(), ReasoningContent: a.reasoning.String(),
		Refusal: a.refusal.String(), ToolCalls: a.calls}
	fr := a.finish
	if fr == "" {
		fr = string(openai.FinishReasonStop)
		if len(a.calls) > 0 {
			fr = string(openai.FinishReasonToolCalls)
		}
	}
	resp := Response{Message: msg, FinishReason: fr}
	if u := a.usage; u != nil {
		resp.Usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	return resp, nil
}
