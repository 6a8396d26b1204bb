package agent

import (
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/textutil"
	openai "github.com/sashabaranov/go-openai"
)

// ErrTruncated: the model's reply was cut off at its output length limit
// (finish_reason "length") again after it was asked to continue. The run
// fails (exit 1): a cut-off reply is never taken as the final answer.
var ErrTruncated = errors.New("the model's reply was cut off at its output length limit")

const continueNudge = "Your last reply was cut off at the output length limit. Continue exactly where it stopped. If you were calling a tool, call it again in full."

// cutOff handles a reply that ended at the length limit: the first time,
// the partial text goes into the history (its tool calls, perhaps cut
// short, do not) and the model is asked to continue (retry true); a
// second time in a row is ErrTruncated with the partial text.
func (r *runner) cutOff(resp Response, cut **string) (retry bool, err error) {
	if resp.FinishReason != string(openai.FinishReasonLength) {
		return false, nil
	}
	text := resp.Message.Content
	if *cut != nil {
		return false, fmt.Errorf("%w twice in a row (step %d); the partial reply was %q; raise the endpoint's output token limit or ask for less at once",
			ErrTruncated, r.step, textutil.Clip(r.redact(**cut+text), 2000))
	}
	*cut = &text
	r.ev.Notice("the model's reply was cut off at its length limit; asking it to continue")
	r.msgs = append(r.msgs, Message{Role: RoleAssistant, Content: orDefault(text, "(cut off)")},
		Message{Role: RoleUser, Content: continueNudge})
	return true, nil
}
