package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// Task statuses of a results line: the agent's (ok, step_limit, timeout,
// error) and StatusSetupFailed when the workspace copy or the sandbox could
// not be provided. Interrupted tasks get no line: --resume reruns them.
const (
	StatusSetupFailed = "setup_failed"
)

// Line is one line of results.jsonl: one finished task.
type Line struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	Exit             int    `json:"exit"` // what `agentbox run` would exit with
	Steps            int    `json:"steps"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Tokens           int    `json:"tokens"`
	DurationMS       int64  `json:"duration_ms"`
	WaitMS           int64  `json:"wait_ms"` // from pick-up to a running sandbox
	Session          string `json:"session"`
	Batch            string `json:"batch,omitempty"` // the batch id of the run that ran it
	DeniedCalls      int    `json:"denied_calls"`
	// Held and Alarms count the task's held changes and its other alarms
	// (Usage has them too); Review says, for a task with any, what to look
	// at: its status stays what the agent ended with (ok is still ok), but
	// it is shown marked (ok!) everywhere.
	Held         int                `json:"held"`
	Alarms       int                `json:"alarms"`
	Review       string             `json:"review,omitempty"`
	FilesChanged []audit.FileChange `json:"files_changed"`
	Error        string             `json:"error,omitempty"`
	Usage        Usage              `json:"usage"` // what happened inside the task
	Started      time.Time          `json:"started"`
	// SandboxStart is how a backend with a warm pool had the task's
	// sandbox (Kubernetes with --pool): sandbox.StartWarm, an idle pod
	// claimed from the pool, or sandbox.StartCold, a new one; absent when
	// no pool was asked.
	SandboxStart string `json:"sandbox_start,omitempty"`
}

// resultsFile appends complete, fsynced lines to results.jsonl.
type resultsFile struct {
	mu sync.Mutex
	f  *os.File
}

// openResults opens path for appending. Existing lines are returned (the
// last one wins for an id); a torn last line (no newline, or not JSON: the
// batch was killed while writing it) is cut off so that appends stay
// valid. Without resume, a file that already holds lines is refused.
func openResults(path string, resume bool) (*resultsFile, map[string]Line, error) {
	done := map[string]Line{}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) > 0 && !resume {
		return nil, nil, fmt.Errorf("%s already holds results; pass --resume to continue that batch, or choose another --output", path)
	}
	keep := 0 // bytes of data that are complete lines
	lineNo := 0
	for off := 0; off < len(data); {
		lineNo++
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			break // torn last line
		}
		raw := bytes.TrimSpace(data[off : off+nl])
		next := off + nl + 1
		if len(raw) > 0 {
			var l Line
			if err := json.Unmarshal(raw, &l); err != nil || l.ID == "" {
				if len(bytes.TrimSpace(data[next:])) > 0 {
					return nil, nil, fmt.Errorf("%s:%d is not a results line; remove that line (its task will run again) and retry", path, lineNo)
				}
				break // the last line is damaged: treat it as torn
			}
			done[l.ID] = l
		}
		keep = next
		off = next
	}
	f, err := openAfterTornTail(path, keep)
	if err != nil {
		return nil, nil, err
	}
	return &resultsFile{f: f}, done, nil
}

// append writes l as one line and fsyncs it.
func (r *resultsFile) append(l Line) error {
	if l.FilesChanged == nil {
		l.FilesChanged = []audit.FileChange{}
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("fsync results: %w", err)
	}
	return nil
}

func (r *resultsFile) close() error { return r.f.Close() }

// openAfterTornTail opens an append-only JSON Lines file for appending
// after cutting it to keep bytes: the intact lines, without a torn last
// line left by a crash mid-write.
func openAfterTornTail(path string, keep int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := f.Truncate(int64(keep)); err != nil {
		f.Close()
		return nil, fmt.Errorf("cutting the torn last line of %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, nil
}
