package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Limits of the lists in Stats.
const (
	statsTopDenied   = 10
	statsMaxFailures = 50
)

// Stats summarises a log.
type Stats struct {
	Records    int            `json:"records"`
	Unreadable int            `json:"unreadable"` // lines that are not records
	First      time.Time      `json:"first"`
	Last       time.Time      `json:"last"`
	Events     map[string]int `json:"events"`
	Decisions  map[string]int `json:"decisions"`  // tool calls by final decision
	DecidedBy  map[string]int `json:"decided_by"` // tool calls by who decided
	Tools      []ToolStats    `json:"tools"`      // most calls first
	Sessions   []SessionStats `json:"sessions"`   // in order of first appearance
	TopDenied  []Count        `json:"top_denied"` // most frequent denied calls
	Failures   []Failure      `json:"failures"`   // the first statsMaxFailures
	FailureN   int            `json:"failure_count"`
	Days       []DayStats     `json:"days"`  // by UTC day, in order
	Rules      []RuleStats    `json:"rules"` // by policy rule, most used first
	Net        []NetStats     `json:"net"`   // proxied connection attempts by host, most first
}

// NetStats counts the net events (proxied connection attempts) of one host.
type NetStats struct {
	Host      string         `json:"host"`
	Attempts  int            `json:"attempts"`
	Decisions map[string]int `json:"decisions"`
}

// ToolStats counts the calls of one tool.
type ToolStats struct {
	Tool      string         `json:"tool"`
	Calls     int            `json:"calls"`
	Decisions map[string]int `json:"decisions"`
	Failed    int            `json:"failed"`
}

// SessionStats describes one session.
type SessionStats struct {
	ID         string    `json:"id"`
	Task       string    `json:"task,omitempty"`
	Model      string    `json:"model,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"` // time of its last record
	Ended      bool      `json:"ended"`
	Status     string    `json:"status,omitempty"`
	Steps      int       `json:"steps"`
	ModelCalls int       `json:"model_calls"`
	ToolCalls  int       `json:"tool_calls"`
	Denied     int       `json:"denied"`
	Failures   int       `json:"failures"`
	Tokens     int       `json:"tokens"`
}

// Count is a value and how often it occurred.
type Count struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Failure is a call that failed (non-zero exit, timeout) or an error.
type Failure struct {
	Line    int    `json:"line"`
	Session string `json:"session"`
	Tool    string `json:"tool,omitempty"`
	Summary string `json:"summary,omitempty"` // the call's arguments
	Kind    string `json:"kind"`              // exit | timeout | error
	Detail  string `json:"detail"`
}

// ComputeStats reads a whole log.
func ComputeStats(r io.Reader) (Stats, error) {
	s := Stats{Events: map[string]int{}, Decisions: map[string]int{}, DecidedBy: map[string]int{}}
	tools := map[string]*ToolStats{}
	sessions := map[string]*SessionStats{}
	var order []string
	denied := map[string]int{}
	calls := map[string]string{} // session+call_id -> args summary
	bd := newBreakdown()
	nets := map[string]*NetStats{}
	err := scanRaw(r, func(l rawLine, rec *Record) error {
		before := s.FailureN
		defer func() { bd.add(rec, s.FailureN > before) }()
		s.Records++
		if s.First.IsZero() || rec.Time.Before(s.First) {
			s.First = rec.Time
		}
		if rec.Time.After(s.Last) {
			s.Last = rec.Time
		}
		s.Events[rec.Event]++
		ss := sessions[rec.Session]
		if ss == nil {
			ss = &SessionStats{ID: rec.Session, Start: rec.Time}
			sessions[rec.Session] = ss
			order = append(order, rec.Session)
		}
		ss.End = rec.Time
		fail := func(kind, detail, tool, summary string) {
			ss.Failures++
			s.FailureN++
			if len(s.Failures) < statsMaxFailures {
				s.Failures = append(s.Failures, Failure{Line: l.n, Session: rec.Session, Tool: tool, Summary: summary, Kind: kind, Detail: detail})
			}
		}
		key := rec.Session + "\x00" + rec.CallID
		switch rec.Event {
		case EventSessionStart:
			ss.Task, ss.Model, ss.Start = rec.Task, rec.Model, rec.Time
		case EventSessionEnd:
			ss.Ended, ss.Status, ss.Steps = true, rec.Status, rec.Steps
		case EventModelCall:
			ss.ModelCalls++
			ss.Tokens += rec.TotalTokens
		case EventToolCall:
			t := tools[rec.Tool]
			if t == nil {
				t = &ToolStats{Tool: rec.Tool, Decisions: map[string]int{}}
				tools[rec.Tool] = t
			}
			summary := ArgsSummary(rec.Tool, rec.Args)
			if rec.Phase != PhaseResult {
				t.Calls++
				t.Decisions[rec.Decision]++
				ss.ToolCalls++
				s.Decisions[rec.Decision]++
				if rec.DecidedBy != "" {
					s.DecidedBy[rec.DecidedBy]++
				}
				if rec.Decision == "deny" {
					ss.Denied++
					denied[rec.Tool+": "+summary]++
				}
				if rec.CallID != "" {
					calls[key] = summary
				}
				break
			}
			if summary == "" {
				summary = calls[key]
			}
			delete(calls, key)
			switch {
			case rec.TimedOut != nil && *rec.TimedOut:
				t.Failed++
				fail("timeout", "timed out", rec.Tool, summary)
			case rec.ExitCode != nil && *rec.ExitCode != 0:
				t.Failed++
				fail("exit", fmt.Sprintf("exit %d", *rec.ExitCode), rec.Tool, summary)
			case rec.Error != "":
				t.Failed++
				fail("error", rec.Error, rec.Tool, summary)
			}
		case EventExecDenied:
			// A program the executor stopped at its exec is a denial of
			// its session, listed among the top denials by its argv.
			ss.Denied++
			s.Decisions[rec.Decision]++
			denied["exec_denied: "+strings.Join(rec.Argv[:min(len(rec.Argv), 6)], " ")]++
		case EventError:
			fail("error", rec.Error, rec.Tool, "")
		case EventNet:
			n := nets[rec.NetHost]
			if n == nil {
				n = &NetStats{Host: rec.NetHost, Decisions: map[string]int{}}
				nets[rec.NetHost] = n
			}
			n.Attempts++
			n.Decisions[rec.Decision]++
		}
		return nil
	}, func(rawLine, error) error {
		s.Unreadable++
		return nil
	})
	for _, id := range order {
		s.Sessions = append(s.Sessions, *sessions[id])
	}
	for _, t := range tools {
		s.Tools = append(s.Tools, *t)
	}
	sort.Slice(s.Tools, func(i, j int) bool {
		if s.Tools[i].Calls != s.Tools[j].Calls {
			return s.Tools[i].Calls > s.Tools[j].Calls
		}
		return s.Tools[i].Tool < s.Tools[j].Tool
	})
	s.TopDenied = topCounts(denied, statsTopDenied)
	bd.fill(&s)
	s.Net = make([]NetStats, 0, len(nets))
	for _, n := range nets {
		s.Net = append(s.Net, *n)
	}
	sort.Slice(s.Net, func(i, j int) bool {
		if s.Net[i].Attempts != s.Net[j].Attempts {
			return s.Net[i].Attempts > s.Net[j].Attempts
		}
		return s.Net[i].Host < s.Net[j].Host
	})
	return s, err
}

func topCounts(m map[string]int, n int) []Count {
	out := make([]Count, 0, len(m))
	for v, c := range m {
		out = append(out, Count{v, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// WriteJSON writes s as indented JSON.
func (s Stats) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText writes s for a person.
func (s Stats) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	if s.Records == 0 {
		p("records: 0\n")
	} else {
		p("records: %d (%s → %s UTC, %s)\n", s.Records, s.First.UTC().Format(time.DateTime),
			s.Last.UTC().Format(time.DateTime), s.Last.Sub(s.First).Round(time.Second))
	}
	if s.Unreadable > 0 {
		p("unreadable lines: %d (run: agentbox audit verify)\n", s.Unreadable)
	}
	p("events: %s\n", countsText(s.Events))
	p("decisions: %s\n", countsText(s.Decisions))
	if len(s.DecidedBy) > 0 {
		p("decided by: %s\n", countsText(s.DecidedBy))
	}
	if len(s.Tools) > 0 {
		p("\ntools:\n")
		for _, t := range s.Tools {
			p("  %s\tcalls %d\t%s\tfailed %d\n", clean(t.Tool, 30), t.Calls, countsText(t.Decisions), t.Failed)
		}
	}
	unended := 0
	for _, ss := range s.Sessions {
		if !ss.Ended {
			unended++
		}
	}
	p("\nsessions: %d (%d never ended)\n", len(s.Sessions), unended)
	for _, ss := range s.Sessions {
		status := clean(ss.Status, 20)
		if !ss.Ended {
			status = "NOT ENDED"
		}
		p("  %s\t%s\t%s\t%d steps\t%d calls\t%d denied\t%d failures\t%d tokens\t%s\n", clean(shortID(ss.ID), 8),
			ss.Start.UTC().Format(time.DateTime), status, ss.Steps, ss.ToolCalls, ss.Denied, ss.Failures, ss.Tokens, quoteClean(ss.Task, 60))
	}
	if len(s.Net) > 0 {
		p("\nnetwork:\n")
		for _, n := range s.Net {
			host := n.Host
			if host == "" {
				host = "(unparsable)"
			}
			p("  %s\tattempts %d\t%s\n", clean(host, 60), n.Attempts, countsText(n.Decisions))
		}
	}
	if len(s.TopDenied) > 0 {
		p("\ntop denied:\n")
		for _, c := range s.TopDenied {
			p("  %d\t%s\n", c.Count, clean(c.Value, 100))
		}
	}
	if s.FailureN > 0 {
		p("\nfailures: %d", s.FailureN)
		if s.FailureN > len(s.Failures) {
			p(" (first %d shown)", len(s.Failures))
		}
		p("\n")
		for _, f := range s.Failures {
			p("  line %d\t%s\t%s\t%s\t%s\n", f.Line, clean(shortID(f.Session), 8), clean(f.Tool, 30), clean(f.Detail, 80), clean(f.Summary, 80))
		}
	}
	writeBreakdown(tw, s)
	return tw.Flush()
}

// countsText renders a count map as "a 3, b 1" (sorted by value).
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := clean(k, 30)
		if k == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, m[k])
	}
	return strings.Join(parts, ", ")
}
