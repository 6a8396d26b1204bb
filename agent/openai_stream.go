package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// errIdle ends a streamed request that sent nothing for the request
// timeout (a stream that keeps sending may take longer in all).
var errIdle = errors.New("the endpoint sent nothing")

// streamOnce asks for one streamed completion. When the endpoint refuses
// the streamed request as such (see refusesStreaming) it asks again
// without streaming, and if that works the client stops streaming for good; a
// plain JSON answer to a streamed request is used as it is, and also
// stops streaming.
func (m *OpenAI) streamOnce(ctx context.Context, req Request) (Response, error) {
	resp, refused, err := m.streamed(ctx, req)
	if err != nil && req.OnDelta != nil {
		req.OnDelta(Delta{Failed: true})
	}
	if refused {
		resp, err = m.once(ctx, req)
		if err == nil {
			m.stream.Store(false)
		}
		return resp, err
	}
	if err == nil && req.OnDelta != nil {
		req.OnDelta(Delta{End: true})
	}
	return resp, err
}

// streamed is one streamed request; refused reports that the endpoint
// rejected the request in a way a request without streaming may not be.
func (m *OpenAI) streamed(ctx context.Context, req Request) (resp Response, refused bool, err error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(m.timeout, func() { cancel(errIdle) })
	defer idle.Stop()
	h := &httpHint{stream: true}
	rctx = context.WithValue(rctx, hintKey{}, h)
	creq := openai.ChatCompletionRequest{Model: m.model, Messages: req.Messages,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
	if len(req.Tools) > 0 {
		creq.Tools = req.Tools
	}
	st, err := m.client.CreateChatCompletionStream(rctx, creq)
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, false, context.Cause(ctx)
		}
		me := m.streamFail(err, h, rctx)
		return Response{}, refusesStreaming(me), me
	}
	defer st.Close()
	a := newStreamAssembler()
	for {
		data, err := st.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return Response{}, false, context.Cause(ctx)
			}
			if a.chunks == 0 {
				if r, ok, perr := m.plainReply(h); ok {
					return r, false, perr
				}
			}
			return Response{}, false, m.streamFail(err, h, rctx)
		}
		idle.Reset(m.timeout)
		d, err := a.add(data)
		if err != nil {
			return Response{}, false, m.fromStream(err, h)
		}
		if req.OnDelta != nil && (d.Text != "" || d.Tool != "" || d.ArgBytes > 0) {
			req.OnDelta(d)
		}
	}
	if a.chunks == 0 {
		if r, ok, perr := m.plainReply(h); ok {
			return r, false, perr
		}
	}
	resp, err = a.result(h.sawDone())
	if err != nil {
		return Response{}, false, m.fromStream(err, h)
	}
	return resp, false, nil
}

// refusesStreaming reports whether me is an endpoint's refusal of a
// streamed request as such: a 4xx (not 401, 403, 404) whose message names
// streaming ("stream is not supported", "Unrecognized request argument
// supplied: stream_options", ...). Another 400 is not asked again.
func refusesStreaming(me *ModelError) bool {
	return me.Kind == ErrModelRequest && me.Status != http.StatusNotFound && strings.Contains(strings.ToLower(me.Msg), "stream")
}

// streamFail classifies the failure of a streamed request.
func (m *OpenAI) streamFail(err error, h *httpHint, rctx context.Context) *ModelError {
	if errors.Is(context.Cause(rctx), errIdle) {
		return &ModelError{Kind: ErrModelUnavailable, Status: h.status(), Msg: fmt.Sprintf("the streamed reply stalled: nothing for %s", m.timeout)}
	}
	me, _ := m.classify(err, h).(*ModelError)
	return me
}

// fromStream completes an assembler error with the status, redacted.
func (m *OpenAI) fromStream(err error, h *httpHint) error {
	var me *ModelError
	if errors.As(err, &me) {
		if me.Status == 0 {
			me.Status = h.status()
		}
		me.Msg = m.redact(me.Msg)
	}
	return err
}

// plainReply reads a whole (not streamed) JSON reply to a streamed
// request; ok false when the body is not one (it is then SSE, or
// nothing). A plain reply stops streaming for the client's life.
func (m *OpenAI) plainReply(h *httpHint) (resp Response, ok bool, err error) {
	h.mu.Lock()
	buf, raw, status := h.body, h.raw, h.code
	h.mu.Unlock()
	if buf == nil {
		return Response{}, false, nil
	}
	b, _ := buf.bytes()
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return Response{}, false, nil
	}
	if raw != nil { // the rest of it, past what the stream reader read
		_, _ = io.Copy(io.Discard, io.LimitReader(raw, maxKeptBody+1))
	}
	b, cut := buf.bytes()
	if cut {
		m.stream.Store(false)
		return Response{}, true, &ModelError{Kind: ErrModelUnavailable, Status: status,
			Msg: fmt.Sprintf("the endpoint answered a streamed request with a whole reply over %d MiB; asking again without streaming", maxKeptBody>>20)}
	}
	var cr openai.ChatCompletionResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		if me := m.wrongReply(err, status, b); me != nil {
			m.stream.Store(false)
			return Response{}, true, me
		}
		return Response{}, false, nil
	}
	if len(cr.Choices) == 0 {
		return Response{}, false, nil // an error object: the stream reader's error says it
	}
	m.stream.Store(false)
	resp, err = m.reply(cr, status)
	return resp, true, err
}

// sawDone reports whether a streamed body carried data: [DONE].
func (h *httpHint) sawDone() bool {
	h.mu.Lock()
	w := h.sse
	h.mu.Unlock()
	return w != nil && w.done()
}

// sseWatch is told a streamed body and notes a data: [DONE] line.
type sseWatch struct {
	mu   sync.Mutex
	line []byte // the start of the current line
	long bool   // the current line is longer than kept
	seen bool
}

const sseWatchKeep = 32

func (w *sseWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			w.endLine()
			continue
		}
		if len(w.line) < sseWatchKeep {
			w.line = append(w.line, c)
		} else {
			w.long = true
		}
	}
	return len(p), nil
}

func (w *sseWatch) endLine() {
	if !w.long && isDoneLine(w.line) {
		w.seen = true
	}
	w.line, w.long = w.line[:0], false
}

func (w *sseWatch) done() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen || (!w.long && isDoneLine(w.line)) // a last line without its newline
}

func isDoneLine(l []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(l), []byte("data:"))
	return ok && string(bytes.TrimSpace(rest)) == "[DONE]"
}
