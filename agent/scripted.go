package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"gopkg.in/yaml.v3"
)

// maxScriptBytes bounds the size of a script file.
const maxScriptBytes = 8 << 20

// maxThink bounds a turn's think time.
const maxThink = time.Minute

// Script is a YAML file of assistant turns replayed by a Scripted model:
//
//	turns:
//	  - tool_calls:
//	      - {name: execute_bash, args: {command: "find . -name '*.py' | wc -l"}}
//	  - tool_calls:
//	      - {name: write_file, args: {path: count.txt, content: "3\n"}}
//	  - content: "There are 3 Python files; the count is in count.txt."
//
// A tool call gives its arguments either as args (a mapping, encoded as
// JSON) or as arguments (the raw string the model would send, e.g. malformed
// JSON). A turn with neither content nor tool calls is an empty reply.
type Script struct {
	Turns []Turn `yaml:"turns"`
}

// Turn is one assistant reply.
type Turn struct {
	Content      string       `yaml:"content"`
	ToolCalls    []ScriptCall `yaml:"tool_calls"`
	FinishReason string       `yaml:"finish_reason"`
	// Think is how long the model takes before this reply (a duration:
	// "1s", "250ms"; none by default), as a real model's latency, for
	// benchmarks and tests of what happens while it thinks.
	Think time.Duration `yaml:"think"`
}

// ScriptCall is one tool call of a Turn.
type ScriptCall struct {
	ID        string         `yaml:"id"`
	Name      string         `yaml:"name"`
	Args      map[string]any `yaml:"args"`
	Arguments *string        `yaml:"arguments"`
}

// ParseScript parses and checks a script; name is used in messages.
func ParseScript(name string, data []byte) (*Script, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Script
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("script %s is empty; it needs a turns: list", name)
		}
		return nil, fmt.Errorf("script %s: %w", name, err)
	}
	if len(s.Turns) == 0 {
		return nil, fmt.Errorf("script %s has no turns; add a turns: list of assistant replies", name)
	}
	for i, t := range s.Turns {
		if t.Think < 0 || t.Think > maxThink {
			return nil, fmt.Errorf("script %s: turns[%d].think %s is outside 0 to %s", name, i, t.Think, maxThink)
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("script %s: turns[%d].tool_calls[%d] has no name", name, i, j)
			}
			if c.Args != nil && c.Arguments != nil {
				return nil, fmt.Errorf("script %s: turns[%d].tool_calls[%d] has both args and arguments; keep one", name, i, j)
			}
			if c.Args != nil {
				if _, err := json.Marshal(c.Args); err != nil {
					return nil, fmt.Errorf("script %s: turns[%d].tool_calls[%d].args cannot be encoded as JSON: %w", name, i, j, err)
				}
			}
		}
	}
	return &s, nil
}

// LoadScript reads a script file.
func LoadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading script %s: %w", path, err)
	}
	if len(data) > maxScriptBytes {
		return nil, fmt.Errorf("script %s is larger than %d bytes", path, maxScriptBytes)
	}
	return ParseScript(path, data)
}

// Scripted is a Model that replays a Script, one turn per call, whatever
// the request says. It is safe for concurrent use.
type Scripted struct {
	name   string
	script *Script
	mu     sync.Mutex
	next   int
}

var _ Model = (*Scripted)(nil)

// NewScripted returns a model replaying s; name appears in the audit log.
func NewScripted(name string, s *Script) *Scripted {
	return &Scripted{name: name, script: s}
}

// Name is "script:" plus the name given to NewScripted.
func (m *Scripted) Name() string { return "script:" + m.name }

// Remaining is the number of turns not yet replayed.
func (m *Scripted) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.script.Turns) - m.next
}

// Complete returns the next turn, or ErrScriptExhausted.
func (m *Scripted) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, context.Cause(ctx)
	}
	m.mu.Lock()
	i := m.next
	if i >= len(m.script.Turns) {
		m.mu.Unlock()
		return Response{}, fmt.Errorf("%w: all %d turns of %s were used and the model was asked again; add turns (ending with a content-only answer) to the script", ErrScriptExhausted, len(m.script.Turns), m.name)
	}
	m.next++
	m.mu.Unlock()
	t := m.script.Turns[i]
	if t.Think > 0 {
		tm := time.NewTimer(t.Think)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return Response{}, context.Cause(ctx)
		}
	}
	msg := Message{Role: RoleAssistant, Content: t.Content}
	for j, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		var args string
		if c.Arguments != nil {
			args = *c.Arguments
		} else {
			a := c.Args
			if a == nil {
				a = map[string]any{}
			}
			b, _ := json.Marshal(a) // checked by ParseScript
			args = string(b)
		}
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: args},
		})
	}
	fr := t.FinishReason
	if fr == "" {
		fr = string(openai.FinishReasonStop)
		if len(msg.ToolCalls) > 0 {
			fr = string(openai.FinishReasonToolCalls)
		}
	}
	prompt := estimateTokens(req.Messages)
	completion := estimateTokens([]Message{msg})
	return Response{
		Message: msg, FinishReason: fr, Attempts: 1,
		Usage: Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	}, nil
}
