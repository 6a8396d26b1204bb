package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Event names (Record.Event).
const (
	EventSessionStart = "session_start"
	EventModelCall    = "model_call"
	EventToolCall     = "tool_call"
	EventApproval     = "approval"
	EventSessionEnd   = "session_end"
	EventError        = "error"
	EventNet          = "net" // one egress attempt (NetHost, NetPort, Decision, Rule, bytes)
	// EventAlarm is one forbidden effect found after a call and undone:
	// Path, What (created, changed, setid, ...), Action (removed,
	// restored, cleared, ...), Rule. Two kinds describe a program instead
	// (Action "reported" or "allowed"): What "unexpected_exec" (it ran and
	// the up-front analysis did not predict it) and "unknown_binary" (its
	// file is not one of the image's executables), each with Path (the
	// executable), Argv, Parents ("argv0 (pid)", nearest first) and Rule
	// (why).
	EventAlarm = "alarm"
)

// Tool-call phases (Record.Phase). A tool call is recorded twice: the
// decision record is written (and fsynced) before the action runs, the result
// record after it. A denied call has only the decision record.
const (
	PhaseDecision = "decision"
	PhaseResult   = "result"
)

// Who made a tool-call decision (Record.DecidedBy).
const (
	DecidedByPolicy      = "policy"
	DecidedByUser        = "user"
	DecidedByFlag        = "flag"
	DecidedBySessionRule = "session-rule"
	DecidedByNoTerminal  = "no-terminal" // ask, and no one could be asked
)

// How far an approval answer reaches (Record.Scope).
const (
	ScopeOnce      = "once"      // this call only
	ScopeSession   = "session"   // this and later matching asks of the session, kept in memory
	ScopeWorkspace = "workspace" // saved for the workspace (agentbox approvals)
)

// File change kinds (FileChange.Change).
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// FormatVersion is the value of Record.V written by this package.
const FormatVersion = 1

// TimeFormat is the layout of Record.Time on disk: RFC 3339, UTC, always six
// fractional digits.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// Record is one line of the audit log. The JSON keys appear on disk in the
// order of the fields below (see MarshalJSON); optional fields are omitted
// when empty.
type Record struct {
	V       int       `json:"v"`
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Event   string    `json:"event"`

	// session_start
	Task          string `json:"task,omitempty"`
	PolicyPath    string `json:"policy_path,omitempty"`
	PolicySHA256  string `json:"policy_sha256,omitempty"`
	Image         string `json:"image,omitempty"`
	ImageID       string `json:"image_id,omitempty"`
	ContainerID   string `json:"container_id,omitempty"`
	Workspace     string `json:"workspace,omitempty"`
	WorkspaceMode string `json:"workspace_mode,omitempty"`
	Learn         *bool  `json:"learn,omitempty"` // a learning run (run --learn): would_ask/would_deny ran
	Model         string `json:"model,omitempty"`
	Version       string `json:"version,omitempty"`
	User          string `json:"user,omitempty"`
	Host          string `json:"host,omitempty"`

	// tool_call (and approval: CallID, Tool, Decision)
	CallID        string         `json:"call_id,omitempty"`
	Tool          string         `json:"tool,omitempty"`
	Args          map[string]any `json:"args,omitempty"`
	Phase         string         `json:"phase,omitempty"`
	Decision      string         `json:"decision,omitempty"`
	Rule          string         `json:"rule,omitempty"`
	DecidedBy     string         `json:"decided_by,omitempty"`
	Reason        string         `json:"reason,omitempty"`
	ExitCode      *int           `json:"exit_code,omitempty"`
	TimedOut      *bool          `json:"timed_out,omitempty"`
	DurationMS    *int64         `json:"duration_ms,omitempty"` // also model_call
	OutputBytes   *int64         `json:"output_bytes,omitempty"`
	OutputSHA256  string         `json:"output_sha256,omitempty"`
	OutputPreview string         `json:"output_preview,omitempty"`
	Truncated     *bool          `json:"truncated,omitempty"`

	// model_call
	Step             int    `json:"step,omitempty"`
	PromptTokens     int    `json:"prompt_tokens,omitempty"`
	CompletionTokens int    `json:"completion_tokens,omitempty"`
	TotalTokens      int    `json:"total_tokens,omitempty"`
	FinishReason     string `json:"finish_reason,omitempty"`

	// session_end
	Status string       `json:"status,omitempty"`
	Steps  int          `json:"steps,omitempty"`
	Answer string       `json:"answer,omitempty"` // preview of the final answer
	Files  []FileChange `json:"files,omitempty"`

	// error / approval
	Error    string `json:"error,omitempty"`
	Approver string `json:"approver,omitempty"`
	// approval: how far the answer reaches (ScopeOnce, ScopeSession,
	// ScopeWorkspace); with Decision "deny" and ScopeSession, later
	// identical asks of the session are denied without asking.
	Scope string `json:"scope,omitempty"`

	// exec_denied, alarm, and the programs of a tool_call result (see
	// enforce.go)
	Argv            []string  `json:"argv,omitempty"`
	PID             int       `json:"pid,omitempty"`
	Exe             string    `json:"exe,omitempty"`
	Parents         []string  `json:"parents,omitempty"` // alarm unexpected_exec/unknown_binary: "argv0 (pid)", nearest first
	Path            string    `json:"path,omitempty"`
	What            string    `json:"what,omitempty"`
	Action          string    `json:"action,omitempty"`
	Programs        []Program `json:"programs,omitempty"`
	ProgramsDropped int       `json:"programs_dropped,omitempty"`
	// What reviewers need besides: the batch task (session_start), the
	// plan of --plan and the model's text reply (model_call), the prompt
	// as shown (approval); and one egress attempt (net).
	TaskID    string   `json:"task_id,omitempty"`
	Batch     string   `json:"batch,omitempty"` // the batch run that wrote the record (every record of a batch)
	Plan      []string `json:"plan,omitempty"`
	Text      string   `json:"text,omitempty"`
	Prompt    string   `json:"prompt,omitempty"`
	NetHost   string   `json:"net_host,omitempty"`
	NetPort   int      `json:"net_port,omitempty"`
	NetAddr   string   `json:"net_addr,omitempty"`
	BytesUp   *int64   `json:"bytes_up,omitempty"`
	BytesDown *int64   `json:"bytes_down,omitempty"`
	// session_end: records the OTLP sink had to drop (a slow collector).
	OTLPDropped int `json:"otlp_dropped,omitempty"`
	// One request inside an intercepted connection (net), a credentialed
	// request's receipt (net: secret, call_id, body_sha256), a refused
	// placeholder (alarm, what "secret_misuse").
	NetMethod  string `json:"net_method,omitempty"`
	NetPath    string `json:"net_path,omitempty"`
	NetStatus  int    `json:"net_status,omitempty"`
	RuleText   string `json:"rule_text,omitempty"`
	Secret     string `json:"secret,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`

	Prev string `json:"prev"`
	MAC  string `json:"mac,omitempty"`
}

// FileChange is one file a session changed in the workspace.
type FileChange struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
	// SHA256Before is the content before the change (a `changes`
	// checkpoint record; "" for an added file).
	SHA256Before string `json:"sha256_before,omitempty"`
	Bytes        int64  `json:"bytes"`
	Change       string `json:"change"` // added | modified | deleted
}

// MarshalJSON encodes r exactly as the writer puts it on disk (minus the
// newline): keys in field order, optional fields omitted when empty, Time in
// TimeFormat, no HTML escaping, invalid UTF-8 replaced by U+FFFD. Decoding
// uses the struct tags (encoding/json).
func (r Record) MarshalJSON() ([]byte, error) {
	return appendRecord(make([]byte, 0, 512), &r, true)
}

// Ptr returns a pointer to v, for the optional fields of Record.
func Ptr[T any](v T) *T { return &v }

// appendRecord appends the JSON object for r. With withMAC false the mac
// member is left out whatever r.MAC holds: those are the bytes the MAC is
// computed over.
func appendRecord(b []byte, r *Record, withMAC bool) ([]byte, error) {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(r.V), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"time":"`...)
	b = r.Time.UTC().AppendFormat(b, TimeFormat)
	b = append(b, '"')
	b = appendKey(b, "session")
	b = appendString(b, r.Session)
	b = appendKey(b, "event")
	b = appendString(b, r.Event)

	b = optString(b, "task", r.Task)
	b = optString(b, "policy_path", r.PolicyPath)
	b = optString(b, "policy_sha256", r.PolicySHA256)
	b = optString(b, "image", r.Image)
	b = optString(b, "image_id", r.ImageID)
	b = optString(b, "container_id", r.ContainerID)
	b = optString(b, "workspace", r.Workspace)
	b = optString(b, "workspace_mode", r.WorkspaceMode)
	b = optBool(b, "learn", r.Learn)
	b = optString(b, "model", r.Model)
	b = optString(b, "version", r.Version)
	b = optString(b, "user", r.User)
	b = optString(b, "host", r.Host)

	b = optString(b, "call_id", r.CallID)
	b = optString(b, "tool", r.Tool)
	if len(r.Args) > 0 {
		args, err := marshalValue(r.Args)
		if err != nil {
			return nil, err
		}
		b = appendKey(b, "args")
		b = append(b, args...)
	}
	b = optString(b, "phase", r.Phase)
	b = optString(b, "decision", r.Decision)
	b = optString(b, "rule", r.Rule)
	b = optString(b, "decided_by", r.DecidedBy)
	b = optString(b, "reason", r.Reason)
	if r.ExitCode != nil {
		b = appendKey(b, "exit_code")
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
	}
	b = optBool(b, "timed_out", r.TimedOut)
	b = optInt64(b, "duration_ms", r.DurationMS)
	b = optInt64(b, "output_bytes", r.OutputBytes)
	b = optString(b, "output_sha256", r.OutputSHA256)
	b = optString(b, "output_preview", r.OutputPreview)
	b = optBool(b, "truncated", r.Truncated)

	b = optInt(b, "step", r.Step)
	b = optInt(b, "prompt_tokens", r.PromptTokens)
	b = optInt(b, "completion_tokens", r.CompletionTokens)
	b = optInt(b, "total_tokens", r.TotalTokens)
	b = optString(b, "finish_reason", r.FinishReason)

	b = optString(b, "status", r.Status)
	b = optInt(b, "steps", r.Steps)
	b = optString(b, "answer", r.Answer)
	if len(r.Files) > 0 {
		b = appendKey(b, "files")
		b = append(b, '[')
		for i, f := range r.Files {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendString(b, f.Path)
			b = optString(b, "sha256", f.SHA256)
			b = optString(b, "sha256_before", f.SHA256Before)
			b = append(b, `,"bytes":`...)
			b = strconv.AppendInt(b, f.Bytes, 10)
			b = append(b, `,"change":`...)
			b = appendString(b, f.Change)
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	b = optString(b, "error", r.Error)
	b = optString(b, "approver", r.Approver)
	b = optString(b, "scope", r.Scope)
	b, err := appendExecInfo(b, r)
	if err != nil {
		return nil, err
	}

	b = optString(b, "task_id", r.TaskID)
	b = optString(b, "batch", r.Batch)
	if len(r.Plan) > 0 {
		b = appendKey(b, "plan")
		b = append(b, '[')
		for i, p := range r.Plan {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, ']')
	}
	b = optString(b, "text", r.Text)
	b = optString(b, "prompt", r.Prompt)
	b = optString(b, "net_host", r.NetHost)
	b = optInt(b, "net_port", r.NetPort)
	b = optString(b, "net_addr", r.NetAddr)
	b = optInt64(b, "bytes_up", r.BytesUp)
	b = optInt64(b, "bytes_down", r.BytesDown)
	b = optInt(b, "otlp_dropped", r.OTLPDropped)
	b = optString(b, "net_method", r.NetMethod)
	b = optString(b, "net_path", r.NetPath)
	b = optInt(b, "net_status", r.NetStatus)
	b = optString(b, "rule_text", r.RuleText)
	b = optString(b, "secret", r.Secret)
	b = optString(b, "body_sha256", r.BodySHA256)

	b = appendKey(b, "prev")
	b = appendString(b, r.Prev)
	if withMAC && r.MAC != "" {
		b = appendKey(b, "mac")
		b = appendString(b, r.MAC)
	}
	return append(b, '}'), nil
}

// marshalValue encodes v with encoding/json (sorted map keys) without HTML
// escaping.
func marshalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func optString(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(appendKey(b, k), v)
}

func optInt(b []byte, k string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(appendKey(b, k), int64(v), 10)
}

func optInt64(b []byte, k string, v *int64) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(appendKey(b, k), *v, 10)
}

func optBool(b []byte, k string, v *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(appendKey(b, k), *v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does without
// HTML escaping: control characters, quote and backslash escaped, invalid
// UTF-8 replaced by \ufffd, U+2028/U+2029 escaped. A newline in s can never
// end the line.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
