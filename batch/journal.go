package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/session"
)

// StatusInterrupted marks, in the summary, a task whose session started
// but whose end was never journalled (the batch was killed or interrupted
// while it ran). It may have had effects, so --resume does not run it
// again unless asked (--rerun-interrupted).
const StatusInterrupted = "interrupted"

// journalName is the task journal in the output directory.
const journalName = "journal.jsonl"

// Journal events.
const (
	journalStart = "start" // written (fsynced) before a task's session starts
	journalEnd   = "end"   // written (fsynced) after it ended and its files were exported
)

// journalEntry is one line of journal.jsonl.
type journalEntry struct {
	Event   string    `json:"event"`
	ID      string    `json:"id"`
	Session string    `json:"session,omitempty"`
	Batch   string    `json:"batch,omitempty"`
	Time    time.Time `json:"time"`
	Result  *Line     `json:"result,omitempty"` // end: the task's results line
}

// journalState is what the journal says about one task: the last start
// and, when that session ended, its result.
type journalState struct {
	Start  journalEntry
	Result *Line
}

// journal appends fsynced entries to journal.jsonl.
type journal struct {
	mu sync.Mutex
	f  *os.File
}

// openJournal reads path and opens it for appending. A torn last line (the
// batch was killed while writing it) is cut off: a torn start means the
// session had not started yet, a torn end that it is not known to have
// ended. Without resume a journal with entries is refused.
func openJournal(path string, resume bool) (*journal, map[string]journalState, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) > 0 && !resume {
		return nil, nil, fmt.Errorf("%s already journals tasks; pass --resume to continue that batch, or choose another --output", path)
	}
	states := map[string]journalState{}
	keep := 0
	for off := 0; off < len(data); {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			break
		}
		next := off + nl + 1
		var e journalEntry
		if raw := bytes.TrimSpace(data[off : off+nl]); len(raw) > 0 {
			if json.Unmarshal(raw, &e) != nil || e.ID == "" {
				break // damaged: everything from here is dropped
			}
			switch e.Event {
			case journalStart:
				states[e.ID] = journalState{Start: e}
			case journalEnd:
				st := states[e.ID]
				if e.Result != nil && (st.Start.Session == "" || st.Start.Session == e.Session) {
					st.Result = e.Result
				}
				states[e.ID] = st
			}
		}
		keep = next
		off = next
	}
	f, err := openAfterTornTail(path, keep)
	if err != nil {
		return nil, nil, err
	}
	return &journal{f: f}, states, nil
}

// put appends e as one line and fsyncs it.
func (j *journal) put(e journalEntry) error {
	e.Time = time.Now().UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the task journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("fsync of the task journal: %w", err)
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }

// recovered decides, on resume, the tasks whose session started in an
// earlier run but has no results line: a journalled end gives the result
// back; a session the audit log says ended (not as interrupted: it was cut
// short) is rebuilt from its session_end record; the others are
// interrupted.
func recovered(states map[string]journalState, done map[string]Line, ended map[string]audit.Record) (rebuilt map[string]Line, interrupted map[string]journalState) {
	rebuilt, interrupted = map[string]Line{}, map[string]journalState{}
	for id, st := range states {
		if l, ok := done[id]; ok && (l.Session == st.Start.Session || st.Start.Session == "") {
			continue // its last session has its results line
		}
		switch rec, ok := ended[st.Start.Session]; {
		case st.Result != nil:
			rebuilt[id] = *st.Result
		case ok && st.Start.Session != "" && rec.Status != agent.StatusInterrupted:
			rebuilt[id] = lineFromAudit(id, st.Start, rec)
		default:
			interrupted[id] = st
		}
	}
	return rebuilt, interrupted
}

// lineFromAudit is the results line of a task whose session ended (its
// session_end record) before the batch could export its files.
func lineFromAudit(id string, start journalEntry, rec audit.Record) Line {
	files := rec.Files
	if files == nil {
		files = []audit.FileChange{}
	}
	l := Line{ID: id, Status: rec.Status, Exit: session.ExitCode(rec.Status, nil), Steps: rec.Steps, Session: start.Session,
		Batch: start.Batch, FilesChanged: files, Started: start.Time,
		Error: "the batch was killed after this task's session ended: result rebuilt from the audit log; its changed files were not exported"}
	if d := rec.Time.Sub(start.Time); d > 0 {
		l.DurationMS = d.Milliseconds()
	}
	return l
}

// endedSessions reads the session_end records of the audit log at path
// for the given sessions ("" path or unreadable: none).
func endedSessions(path string, want map[string]bool) map[string]audit.Record {
	out := map[string]audit.Record{}
	if path == "" || len(want) == 0 {
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	_ = audit.Scan(f, func(_ int, rec audit.Record) error {
		if rec.Event == "session_end" && want[rec.Session] {
			out[rec.Session] = rec
		}
		return nil
	})
	return out
}

// journalStart records, fsynced, that t's session is about to start.
func (b *batcher) journalStart(t *Task, session string) error {
	if err := b.journal.put(journalEntry{Event: journalStart, ID: t.ID, Session: session, Batch: b.id}); err != nil {
		return fmt.Errorf("%w; the task was not started (its start could not be journalled)", err)
	}
	b.mu.Lock()
	b.started[t.ID] = true
	b.mu.Unlock()
	return nil
}

// recover adds to done the tasks an earlier run finished without a
// results line (appending it now) and returns the interrupted ones.
func (b *batcher) recover(states map[string]journalState, done map[string]Line) map[string]bool {
	want := map[string]bool{}
	for id, st := range states {
		if l, ok := done[id]; (!ok || l.Session != st.Start.Session) && st.Result == nil {
			want[st.Start.Session] = true
		}
	}
	rebuilt, intr := recovered(states, done, endedSessions(b.cfg.AuditPath, want))
	for id, l := range rebuilt {
		if states[id].Result == nil {
			_ = b.journal.put(journalEntry{Event: journalEnd, ID: id, Session: l.Session, Batch: l.Batch, Result: &l})
		}
		if b.results.append(l) == nil {
			done[id] = l
		}
	}
	out := map[string]bool{}
	for id := range intr {
		out[id] = true
	}
	return out
}
