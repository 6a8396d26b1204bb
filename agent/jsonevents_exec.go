package agent

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/agentbox/agentbox/sandbox"
)

// SessionStart is what a session runs under: the "start" event of
// --json-events and the header on stderr.
type SessionStart struct {
	Event         string `json:"event"` // "start"
	Session       string `json:"session"`
	Policy        string `json:"policy"`
	Network       string `json:"network"`
	Workspace     string `json:"workspace"`
	WorkspaceMode string `json:"workspace_mode"`
	Audit         string `json:"audit"`
	Broker        string `json:"broker,omitempty"`       // BrokerSummary: secrets brokered, passthrough hosts
	GitIdentity   string `json:"git_identity,omitempty"` // who commits in the sandbox
}

// outputEvent is a piece of a command's output: "text" when it is valid
// UTF-8, else "base64" with the exact bytes.
type outputEvent struct {
	Event  string `json:"event"` // "output"
	Stream string `json:"stream"`
	Text   string `json:"text,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

// execEnd is the last event of `agentbox exec --json-events`.
type execEnd struct {
	Event       string               `json:"event"` // "end"
	Status      string               `json:"status"`
	ExitCode    int                  `json:"exit_code"` // what agentbox exits with
	Session     string               `json:"session"`
	OutputBytes int64                `json:"output_bytes"`
	OutputSHA   string               `json:"output_sha256,omitempty"`
	DeniedExecs []sandbox.DeniedExec `json:"denied_execs,omitempty"`
	Alarms      []sandbox.Alarm      `json:"alarms,omitempty"`
}

func (j *JSONEvents) put(v any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	enc := json.NewEncoder(j.W)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Start emits "start".
func (j *JSONEvents) Start(s SessionStart) {
	s.Event = "start"
	j.put(s)
}

// Output is a writer for one stream of a command ("stdout", "stderr"):
// each write is one "output" event. Give it redacted text (Tools.Stdout
// and Tools.Stderr are redacted before they reach it).
func (j *JSONEvents) Output(stream string) io.Writer {
	return outputWriter{j, stream}
}

type outputWriter struct {
	j      *JSONEvents
	stream string
}

func (w outputWriter) Write(p []byte) (int, error) {
	e := outputEvent{Event: "output", Stream: w.stream}
	if utf8.Valid(p) {
		e.Text = string(p)
	} else {
		e.Base64 = base64.StdEncoding.EncodeToString(p)
	}
	w.j.put(e)
	return len(p), nil
}

// ExecEnd emits "end" for one `agentbox exec`: its status (ok, failed,
// denied, timed_out, ...), the exit code and what the layers below the
// up-front check did.
func (j *JSONEvents) ExecEnd(session, status string, exitCode int, o Outcome) {
	j.put(execEnd{Event: "end", Status: status, ExitCode: exitCode, Session: session,
		OutputBytes: o.OutBytes, OutputSHA: o.OutSHA256, DeniedExecs: o.DeniedExecs, Alarms: o.Alarms})
}
