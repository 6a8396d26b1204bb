package agent

// StepEvents is implemented by Events that also want to know when a model
// request or a tool call starts (a live elapsed-time line) and what the
// model said at each step (a JSON event stream). Run calls it only when
// its Events implements it.
type StepEvents interface {
	// ModelRequest reports that model step step is being asked for.
	ModelRequest(step, maxSteps int)
	// ModelText reports the model's text at step step ("" with tool calls
	// only is not reported).
	ModelText(step int, text string)
	// ToolStarted reports that a tool call of step step begins; args is
	// the model's JSON arguments, unchecked.
	ToolStarted(step int, tool, args string)
}

func stepEvents(ev Events) StepEvents {
	if s, ok := ev.(StepEvents); ok {
		return s
	}
	return nopStepEvents{}
}

type nopStepEvents struct{}

func (nopStepEvents) ModelRequest(int, int)           {}
func (nopStepEvents) ModelText(int, string)           {}
func (nopStepEvents) ToolStarted(int, string, string) {}

var _ StepEvents = nopStepEvents{}

// DeltaEvents is implemented by Events that show a streamed reply while
// it arrives (the live line, --json-events). Run passes ModelDelta as
// the model request's OnDelta when its Events implements it; it may be
// called from another goroutine than the other events (the first
// request runs while the sandbox starts).
type DeltaEvents interface {
	// ModelDelta reports what model step step's streamed reply added.
	ModelDelta(step int, d Delta)
}

// onDelta is the OnDelta of model step step's request (nil when the
// Events do not want deltas).
func (r *runner) onDelta(step int) func(Delta) {
	de, ok := r.ev.(DeltaEvents)
	if !ok {
		return nil
	}
	return func(d Delta) { de.ModelDelta(step, d) }
}
