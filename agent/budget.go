package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// DefaultContextBudget is the history size, in estimated tokens, above
// which older tool outputs are elided.
const DefaultContextBudget = 60000

// elideMin is the size below which a tool message is never elided: the note
// would not be much shorter.
const elideMin = 512

// estimateTokens estimates the tokens of msgs as bytes/4, plus a little per
// message.
func estimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.ReasoningContent) + 16
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments) + 16
		}
	}
	return n / 4
}

// outputMeta is what the audit log knows about a tool message's output, so
// that the elision note can point at it.
type outputMeta struct {
	bytes int64
	sha   string
}

// elide replaces the content of older tool messages by a short note, oldest
// first, until the estimate of msgs fits budget. Tool messages after the
// last assistant message (the latest results) are kept whole. It returns
// how many messages it elided.
func elide(msgs []Message, budget int, meta map[string]outputMeta) int {
	if budget <= 0 || estimateTokens(msgs) <= budget {
		return 0
	}
	last := -1
	for i, m := range msgs {
		if m.Role == RoleAssistant {
			last = i
		}
	}
	total := estimateTokens(msgs) * 4
	limit := budget * 4
	n := 0
	for i := 0; i < last && total > limit; i++ {
		m := &msgs[i]
		if m.Role != RoleTool || len(m.Content) < elideMin || strings.HasPrefix(m.Content, elidedPrefix) {
			continue
		}
		md, ok := meta[m.ToolCallID]
		if !ok {
			sum := sha256.Sum256([]byte(m.Content))
			md = outputMeta{bytes: int64(len(m.Content)), sha: hex.EncodeToString(sum[:])}
		}
		note := fmt.Sprintf("%s; %d bytes, sha256 %s; full output is in the audit log]", elidedPrefix, md.bytes, md.sha)
		total -= len(m.Content) - len(note)
		m.Content = note
		n++
	}
	return n
}

const elidedPrefix = "[output elided by agentbox to save context"
