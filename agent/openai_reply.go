package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentbox/agentbox/internal/textutil"
)

// ErrModelReply: the endpoint answered 2xx with a reply that is JSON but
// not a chat completion agentbox can use (a tool call's arguments sent as
// an object instead of a string, a field of the wrong type). Retrying the
// same request would get the same reply: it is not retried.
var ErrModelReply = errors.New("model endpoint sent a reply agentbox cannot use")

// RefusedCall is a tool call carried by a reply agentbox could not use:
// it never runs, and it is recorded as refused.
type RefusedCall struct {
	ID, Name, Args string
}

// maxKeptBody bounds how much of a reply is kept to explain it.
const maxKeptBody = 1 << 20

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
	cut bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	if len(c.b)+len(p) > c.max {
		c.cut = true
	}
	return len(p), nil
}

func (c *cappedBuffer) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b, c.cut
}

// teeBody copies what go-openai reads of a body into a cappedBuffer.
type teeBody struct {
	io.ReadCloser
	w io.Writer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		_, _ = t.w.Write(p[:n])
	}
	return n, err
}

// undecodable explains a 2xx reply go-openai could not decode: a
// *ModelError of kind ErrModelReply with the reason and the tool calls the
// reply carried, when the body is JSON; nil when the failure is something
// else (a network error, a body that is not JSON: those may be transient).
func (m *OpenAI) undecodable(err error, h *httpHint) *ModelError {
	h.mu.Lock()
	status, buf := h.code, h.body
	h.mu.Unlock()
	if status/100 != 2 || buf == nil {
		return nil
	}
	body, cut := buf.bytes()
	if cut {
		return nil
	}
	return m.wrongReply(err, status, body)
}

// wrongReply is undecodable for a whole body: nil unless err is a JSON
// type error and body is JSON.
func (m *OpenAI) wrongReply(err error, status int, body []byte) *ModelError {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !json.Valid(body) {
		return nil
	}
	why := fmt.Sprintf("field %q is a JSON %s where the chat-completions API has a %s", te.Field, te.Value, te.Type)
	return &ModelError{Kind: ErrModelReply, Status: status, Msg: m.redact(textutil.Clip(why, 300)),
		Hint:  "the endpoint is not OpenAI-compatible for this model (tool-call arguments must be a JSON string); try another model or endpoint",
		Calls: replyCalls(body)}
}

// replyCalls reads the tool calls of a reply leniently: arguments as a
// string or as any JSON value.
func replyCalls(body []byte) []RefusedCall {
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       any `json:"id"`
					Function struct {
						Name      any             `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Choices) == 0 {
		return nil
	}
	var out []RefusedCall
	for _, tc := range r.Choices[0].Message.ToolCalls {
		c := RefusedCall{ID: textutil.Clip(fmt.Sprint(orEmpty(tc.ID)), 100), Name: textutil.Clip(fmt.Sprint(orEmpty(tc.Function.Name)), 100), Args: string(tc.Function.Arguments)}
		var s string
		if json.Unmarshal(tc.Function.Arguments, &s) == nil {
			c.Args = s
		}
		out = append(out, c)
	}
	return out
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}
