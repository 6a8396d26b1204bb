package agent

import "sync"

// deltaStream is the JSONEvents' state of the streamed reply being
// emitted.
type deltaStream struct {
	mu   sync.Mutex // held across the stream's writes; never inside JSONEvents.mu
	step int
	w    *redactStream
}

var _ DeltaEvents = (*JSONEvents)(nil)

// ModelDelta emits "model_delta" events with the text of a streamed reply
// as it arrives, a line at a time (a partial line after a pause): the
// text goes through a redacting stream, so a secret split over chunks is
// redacted whole. "model_delta" with "reset": true voids the step's
// earlier deltas (the reply failed and is asked for again); "model_text"
// still carries the whole text once the reply is complete.
func (j *JSONEvents) ModelDelta(step int, d Delta) {
	ds := &j.delta
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.w != nil && (d.End || d.Failed || ds.step != step) {
		if d.Failed && ds.step == step {
			ds.w.discard()
			j.emit(jsonEvent{Event: "model_delta", Step: step, Reset: true})
		} else {
			_ = ds.w.Close()
		}
		ds.w = nil
	}
	if d.Text == "" || d.End || d.Failed {
		return
	}
	if ds.w == nil {
		ds.step = step
		ds.w = newRedactStream(deltaWriter{j, step}, func(s string) string { return s }) // emit redacts
	}
	_, _ = ds.w.Write([]byte(d.Text))
}

// deltaWriter emits what the redacting stream lets through.
type deltaWriter struct {
	j    *JSONEvents
	step int
}

func (w deltaWriter) Write(p []byte) (int, error) {
	w.j.emit(jsonEvent{Event: "model_delta", Step: w.step, Text: string(p)})
	return len(p), nil
}
