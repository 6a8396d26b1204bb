package audit

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ShowOptions control Show's output.
type ShowOptions struct {
	JSON  bool // JSON Lines: the matching lines exactly as stored
	Color bool // ANSI colours: denials, failures and errors red, asks yellow
}

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
	showTime   = "2006-01-02 15:04:05.000"
)

// Show writes the records of the log matching f: one line per record for a
// person (time UTC, short session id, event, tool, arguments, decision and
// rule, exit code, duration; denials as "DENY"), or, with opts.JSON, the raw
// matching lines. Text from the log is escaped so that it cannot drive the
// terminal. Unreadable lines are mentioned in the human form only.
func Show(w io.Writer, r io.Reader, f Filter, opts ShowOptions) error {
	bw := bufio.NewWriter(w)
	m := newMatcher(f)
	err := scanRaw(r, func(l rawLine, rec *Record) error {
		if !m.match(l.b, rec) {
			return nil
		}
		if opts.JSON {
			bw.Write(l.b)
			return bw.WriteByte('\n')
		}
		bw.WriteString(FormatRecord(rec, opts.Color))
		return bw.WriteByte('\n')
	}, func(l rawLine, err error) error {
		if !opts.JSON {
			fmt.Fprintf(bw, "line %d: unreadable record (%s); run: agentbox audit verify\n", l.n, clean(err.Error(), 200))
		}
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// FormatRecord renders one record as a single timeline line (see Show).
func FormatRecord(rec *Record, color bool) string {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	event := rec.Event
	if rec.Event == EventToolCall && rec.Phase == PhaseResult {
		event = "tool_result"
	}
	var d string
	switch rec.Event {
	case EventSessionStart:
		d = joinNonEmpty(
			kv("task", quoteClean(rec.Task, 80)), kv("image", clean(rec.Image, 60)),
			kv("model", clean(rec.Model, 40)), kv("workspace", clean(rec.Workspace, 80)),
			kv("mode", clean(rec.WorkspaceMode, 10)), kv("policy", clean(rec.PolicyPath, 80)),
			kv("user", clean(rec.User, 30)), kv("host", clean(rec.Host, 30)), kv("batch-task", clean(rec.TaskID, 40)))
	case EventModelCall:
		d = joinNonEmpty(
			kv("step", itoa(rec.Step)),
			kv("tokens", tokens(rec)),
			kv("finish", clean(rec.FinishReason, 30)),
			durationText(rec.DurationMS), planText(rec.Plan), kv("text", quoteClean(rec.Text, 100)))
	case EventToolCall:
		if rec.Phase == PhaseResult {
			d = fmt.Sprintf("%-13s %s", clean(rec.Tool, 30), resultText(rec, paint))
		} else {
			d = fmt.Sprintf("%-13s %s  → %s", clean(rec.Tool, 30), ArgsSummary(rec.Tool, rec.Args), decisionText(rec, paint))
		}
	case EventApproval:
		d = joinNonEmpty(clean(rec.CallID, 40), clean(rec.Tool, 30), ArgsSummary(rec.Tool, rec.Args),
			"→ "+decisionWord(rec.Decision, paint), kv("by", clean(rec.Approver, 40)), kv("scope", clean(rec.Scope, 20)), quoteClean(rec.Reason, 80))
	case EventSessionEnd:
		files := ""
		if len(rec.Files) > 0 {
			files = fmt.Sprintf("%d files changed", CountFiles(rec.Files))
		}
		status := clean(rec.Status, 30)
		if rec.Status != "" && rec.Status != "done" && rec.Status != "ok" {
			status = paint(ansiRed, status)
		}
		d = joinNonEmpty(kv("status", status), kv("steps", itoa(rec.Steps)), files, kv("answer", quoteClean(rec.Answer, 80)))
	case EventNet:
		d = netText(rec, paint)
	case EventAlarm:
		d = paint(ansiRed, "ALARM: "+joinNonEmpty(clean(rec.What, 30), clean(rec.Reason, 200), clean(rec.Rule, 120),
			kv("path", clean(rec.Path, 120)), kv("action", clean(rec.Action, 20)), kv("argv", quoteClean(strings.Join(rec.Argv, " "), 120)),
			kv("parents", clean(strings.Join(rec.Parents, " < "), 160))))
	case EventExecDenied:
		d = joinNonEmpty(clean(rec.Tool, 30), quoteClean(strings.Join(rec.Argv, " "), 120), kv("exe", clean(rec.Exe, 80)),
			"→ "+decisionText(rec, paint))
	case EventError:
		d = paint(ansiRed, "error: "+clean(rec.Error, 200))
	default:
		d = joinNonEmpty(clean(rec.Tool, 30), clean(rec.Error, 200))
	}
	if rec.Error != "" && rec.Event != EventError {
		d += "  " + paint(ansiRed, "error: "+clean(rec.Error, 200))
	}
	return fmt.Sprintf("%s  %-8s  %-13s  %s", rec.Time.UTC().Format(showTime), clean(shortID(rec.Session), 8), clean(event, 20), d)
}

func decisionWord(d string, paint func(string, string) string) string {
	w := strings.ToUpper(clean(d, 20))
	switch d {
	case "deny":
		return paint(ansiRed, w)
	case "ask", DecisionWouldAsk, DecisionWouldDeny:
		return paint(ansiYellow, w)
	}
	return w
}

func decisionText(rec *Record, paint func(string, string) string) string {
	s := decisionWord(rec.Decision, paint)
	if rec.Decision == "" {
		s = "?"
	}
	if rec.Rule != "" {
		s += " " + clean(rec.Rule, 60)
	}
	if rec.DecidedBy != "" && rec.DecidedBy != DecidedByPolicy {
		s += " (by " + clean(rec.DecidedBy, 20) + ")"
	}
	if rec.Reason != "" {
		s += ": " + clean(rec.Reason, 120)
	}
	return s
}

func resultText(rec *Record, paint func(string, string) string) string {
	var parts []string
	if rec.ExitCode != nil {
		e := fmt.Sprintf("exit %d", *rec.ExitCode)
		if *rec.ExitCode != 0 {
			e = paint(ansiRed, e)
		}
		parts = append(parts, e)
	}
	if rec.TimedOut != nil && *rec.TimedOut {
		parts = append(parts, paint(ansiRed, "TIMED OUT"))
	}
	parts = append(parts, durationText(rec.DurationMS))
	if rec.OutputBytes != nil {
		parts = append(parts, fmt.Sprintf("%d B out", *rec.OutputBytes))
	}
	if rec.Truncated != nil && *rec.Truncated {
		parts = append(parts, "(output truncated)")
	}
	return joinNonEmpty(parts...)
}

func planText(plan []string) string {
	if len(plan) == 0 {
		return ""
	}
	parts := make([]string, len(plan))
	for i, p := range plan {
		parts[i] = fmt.Sprintf("%d. %s", i+1, clean(p, 60))
	}
	return "plan: " + strings.Join(parts, " ")
}

func durationText(ms *int64) string {
	if ms == nil {
		return ""
	}
	return (time.Duration(*ms) * time.Millisecond).String()
}

func tokens(rec *Record) string {
	if rec.TotalTokens == 0 && rec.PromptTokens == 0 {
		return ""
	}
	return fmt.Sprintf("%d+%d=%d", rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens)
}

// ArgsSummary renders tool arguments on one short line: the command of
// execute_bash, the path (and content size) of file tools, else compact
// JSON; control characters escaped.
func ArgsSummary(tool string, args map[string]any) string {
	if len(args) == 0 {
		return ""
	}
	if c, ok := args["command"].(string); ok {
		return clean(c, 100)
	}
	if p, ok := args["path"].(string); ok {
		s := clean(p, 100)
		if c, ok := args["content"].(string); ok {
			s += fmt.Sprintf(" (%d bytes)", len(c))
		}
		return s
	}
	b, err := marshalValue(args)
	if err != nil {
		return "?"
	}
	return clean(string(b), 100)
}

// clean makes s safe and short for one terminal line: newlines, tabs and
// other control or invisible-format characters (ANSI escapes, bidi
// overrides) are escaped, invalid UTF-8 shown as \xNN, and the result cut at
// max runes with "…".
func clean(s string, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		if n >= max {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
		n++
	}
	return b.String()
}

func quoteClean(s string, max int) string {
	if s == "" {
		return ""
	}
	return `"` + clean(s, max) + `"`
}

func kv(k, v string) string {
	if v == "" {
		return ""
	}
	return k + " " + v
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func joinNonEmpty(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "  ")
}

func shortID(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
