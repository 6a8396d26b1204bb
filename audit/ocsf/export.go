package ocsf

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/agentbox/agentbox/audit"
)

// Version is the OCSF schema version the export follows.
const Version = "1.3.0"

// Stats counts what Export wrote and read.
type Stats struct {
	Events     int            `json:"events"`
	ByClass    map[string]int `json:"by_class"`
	Unreadable int            `json:"unreadable"` // lines that are not records
	Unfinished int            `json:"unfinished"` // calls with a decision and no result (exported as such)
}

// src is one record with what names it: its line and hash, and the
// members of its line the Record type does not know (newer record kinds,
// e.g. an alarm's kind).
type src struct {
	rec  *audit.Record
	line int
	sum  string
	raw  map[string]any
}

// session is what a session_start says about the records after it.
type session struct {
	user, host, version, policy, policySHA, container, image, imageID, model string
	// checkpointed: its changes records listed its files (a staged
	// workspace); session_end's list repeats them and is no new event.
	checkpointed bool
}

// exporter carries state across records.
type exporter struct {
	sessions map[string]*session
	pending  map[string]*src // session+call_id -> tool_call decision
	order    []string        // pending keys in log order
	emit     func(ev map[string]any) error
}

// Export reads a log and writes one OCSF event per line to w.
func Export(w io.Writer, r io.Reader) (Stats, error) {
	st := Stats{ByClass: map[string]int{}}
	bw := bufio.NewWriter(w)
	x := &exporter{sessions: map[string]*session{}, pending: map[string]*src{}}
	x.emit = func(ev map[string]any) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		st.Events++
		if name, _ := ev["class_name"].(string); name != "" {
			st.ByClass[name]++
		}
		bw.Write(b)
		return bw.WriteByte('\n')
	}
	err := audit.ScanLines(r, func(line int, b []byte, rec *audit.Record) error {
		s := &src{rec: rec, line: line}
		sum := sha256.Sum256(b)
		s.sum = hex.EncodeToString(sum[:])
		if b != nil {
			_ = json.Unmarshal(b, &s.raw)
		}
		return x.record(s)
	}, func(int, []byte) error {
		st.Unreadable++
		return nil
	})
	if err == nil {
		// Calls whose result never came (a crash, a cut log) are exported
		// with what is known.
		for _, k := range x.order {
			d := x.pending[k]
			if d == nil {
				continue
			}
			delete(x.pending, k)
			st.Unfinished++
			if err = x.emit(x.toolCall(d, nil)); err != nil {
				break
			}
		}
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return st, err
}

func (x *exporter) sess(id string) *session {
	s := x.sessions[id]
	if s == nil {
		s = &session{}
		x.sessions[id] = s
	}
	return s
}

// record maps one record; a tool call's decision waits for its result;
// the files of a changes record are one File System Activity each, and
// so are session_end's in a session without changes records.
func (x *exporter) record(s *src) error {
	rec := s.rec
	if rec.Event == audit.EventSessionStart {
		*x.sess(rec.Session) = session{user: rec.User, host: rec.Host, version: rec.Version, policy: rec.PolicyPath,
			policySHA: rec.PolicySHA256, container: rec.ContainerID, image: rec.Image, imageID: rec.ImageID, model: rec.Model}
	}
	key := rec.Session + "\x00" + rec.CallID
	switch {
	case rec.Event == audit.EventToolCall && rec.Phase != audit.PhaseResult && audit.Ran(rec.Decision) && rec.CallID != "":
		if _, seen := x.pending[key]; !seen {
			x.order = append(x.order, key)
		}
		x.pending[key] = s
		return nil
	case rec.Event == audit.EventToolCall && rec.Phase == audit.PhaseResult:
		d := x.pending[key]
		delete(x.pending, key)
		return x.emit(x.toolCall(d, s))
	case rec.Event == audit.EventToolCall:
		return x.emit(x.toolCall(s, nil))
	case rec.Event == audit.EventChanges && len(rec.Files) > 0:
		x.sess(rec.Session).checkpointed = true
		return x.emitAll(x.fileChanges(s))
	}
	if err := x.emit(x.other(s)); err != nil || rec.Event != audit.EventSessionEnd || x.sess(rec.Session).checkpointed {
		return err
	}
	return x.emitAll(x.fileChanges(s)) // what the session changed, file by file
}

func (x *exporter) emitAll(evs []map[string]any) error {
	for _, ev := range evs {
		if err := x.emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// other maps every record that is not a tool call.
func (x *exporter) other(s *src) map[string]any {
	switch s.rec.Event {
	case audit.EventSessionStart, audit.EventSessionEnd:
		return x.lifecycle(s)
	case audit.EventModelCall:
		return x.modelCall(s)
	case audit.EventExecDenied:
		return x.execDenied(s)
	case audit.EventNet:
		return x.network(s)
	case audit.EventApproval:
		return x.approval(s)
	case audit.EventAlarm:
		return x.alarm(s)
	}
	return x.base(s) // error, and record kinds newer than this exporter
}
