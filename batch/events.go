package batch

import (
	"encoding/json"
	"io"
	"sync"
)

// Events hears about each task as it starts and finishes (from several
// workers at once).
type Events interface {
	TaskStarted(t *Task)
	TaskFinished(l Line)
}

// JSONEvents writes one JSON object per line for programs that drive a
// batch (`agentbox batch --json-events`): "task_started", "task_finished"
// (with the task's results line) and, from End, a last "end" with the
// summary. Every object has "event".
type JSONEvents struct {
	W  io.Writer
	mu sync.Mutex
}

var _ Events = (*JSONEvents)(nil)

type batchEvent struct {
	Event   string   `json:"event"`
	ID      string   `json:"id,omitempty"`
	Status  string   `json:"status,omitempty"`
	Exit    *int     `json:"exit,omitempty"`
	Line    int      `json:"line,omitempty"` // in the task file
	Result  *Line    `json:"result,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
}

func (j *JSONEvents) put(e batchEvent) {
	j.mu.Lock()
	defer j.mu.Unlock()
	enc := json.NewEncoder(j.W)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// TaskStarted emits "task_started".
func (j *JSONEvents) TaskStarted(t *Task) {
	j.put(batchEvent{Event: "task_started", ID: t.ID, Line: t.Line})
}

// TaskFinished emits "task_finished" with the results line.
func (j *JSONEvents) TaskFinished(l Line) {
	j.put(batchEvent{Event: "task_finished", ID: l.ID, Status: l.Status, Exit: &l.Exit, Result: &l})
}

// End emits "end" with the summary; status is ok, failed, stopped (the
// circuit breaker tripped) or interrupted.
func (j *JSONEvents) End(s Summary) {
	status := "ok"
	switch {
	case s.Interrupted:
		status = "interrupted"
	case s.Stopped != "":
		status = "stopped"
	case !s.AllOK():
		status = "failed"
	}
	j.put(batchEvent{Event: "end", Status: status, Summary: &s})
}
