package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// writeStream sends msg as the SSE chunks of a streamed chat completion
// (see Reply).
func writeStream(w http.ResponseWriter, rep Reply, msg openai.ChatCompletionMessage, finish string, usage *openai.Usage) {
	chunks := StreamChunks(msg, finish, rep.ChunkBytes, rep.Interleave)
	if rep.Cut {
		chunks = chunks[:len(chunks)/2]
	} else if usage != nil {
		chunks = append(chunks, openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: usage})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	for _, c := range chunks {
		c.ID, c.Object, c.Model = "chatcmpl-stream", "chat.completion.chunk", "test-model"
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	if !rep.Cut {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

// StreamChunks cuts a reply into stream chunks as OpenAI sends them: the
// role first, the content in pieces of size bytes (default 5; never inside
// a character), then each tool call (index, id, type and name first, its
// arguments in pieces; the calls' pieces round-robin when interleave is
// set), and a last chunk with the finish reason.
func StreamChunks(msg openai.ChatCompletionMessage, finish string, size int, interleave bool) []openai.ChatCompletionStreamResponse {
	if size <= 0 {
		size = 5
	}
	one := func(d openai.ChatCompletionStreamChoiceDelta, fr string) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: d, FinishReason: openai.FinishReason(fr)}}}
	}
	out := []openai.ChatCompletionStreamResponse{one(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, "")}
	for _, p := range pieces(msg.Content, size) {
		out = append(out, one(openai.ChatCompletionStreamChoiceDelta{Content: p}, ""))
	}
	var lanes [][]openai.ChatCompletionStreamResponse
	for i, tc := range msg.ToolCalls {
		idx := i
		first := openai.ToolCall{Index: &idx, ID: tc.ID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tc.Function.Name}}
		lane := []openai.ChatCompletionStreamResponse{one(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{first}}, "")}
		for _, p := range pieces(tc.Function.Arguments, size) {
			lane = append(lane, one(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &idx, Function: openai.FunctionCall{Arguments: p}}}}, ""))
		}
		lanes = append(lanes, lane)
	}
	if !interleave {
		for _, l := range lanes {
			out = append(out, l...)
		}
	} else {
		for more := true; more; {
			more = false
			for i := range lanes {
				if len(lanes[i]) > 0 {
					out = append(out, lanes[i][0])
					lanes[i] = lanes[i][1:]
					more = true
				}
			}
		}
	}
	return append(out, one(openai.ChatCompletionStreamChoiceDelta{}, finish))
}

// pieces cuts s every size bytes, moved back to a character boundary.
func pieces(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 1 && !utf8.RuneStart(s[n]) {
			n--
		}
		for n < len(s) && !utf8.RuneStart(s[n]) { // a character longer than size
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
