package audit

import (
	"fmt"
	"sort"
	"text/tabwriter"
)

// DayStats counts one UTC day of a log.
type DayStats struct {
	Day       string `json:"day"` // 2026-11-29
	Records   int    `json:"records"`
	Sessions  int    `json:"sessions"` // sessions with a record that day
	ToolCalls int    `json:"tool_calls"`
	Denied    int    `json:"denied"`
	Asked     int    `json:"asked"` // approvals
	Failures  int    `json:"failures"`
	Net       int    `json:"net"`
	Alarms    int    `json:"alarms"`
}

// RuleStats counts the tool-call decisions one policy rule made.
type RuleStats struct {
	Rule      string         `json:"rule"`
	Calls     int            `json:"calls"`
	Decisions map[string]int `json:"decisions"`
}

// breakdown collects Stats.Days and Stats.Rules.
type breakdown struct {
	days     map[string]*DayStats
	daySess  map[string]map[string]bool
	rules    map[string]*RuleStats
	dayOrder []string
}

func newBreakdown() *breakdown {
	return &breakdown{days: map[string]*DayStats{}, daySess: map[string]map[string]bool{}, rules: map[string]*RuleStats{}}
}

func (b *breakdown) add(rec *Record, failed bool) {
	day := rec.Time.UTC().Format("2006-01-02")
	d := b.days[day]
	if d == nil {
		d = &DayStats{Day: day}
		b.days[day] = d
		b.daySess[day] = map[string]bool{}
		b.dayOrder = append(b.dayOrder, day)
	}
	d.Records++
	if !b.daySess[day][rec.Session] {
		b.daySess[day][rec.Session] = true
		d.Sessions++
	}
	if failed {
		d.Failures++
	}
	switch rec.Event {
	case EventApproval:
		d.Asked++
	case EventNet:
		d.Net++
		if rec.Decision == "deny" {
			d.Denied++
		}
	case EventAlarm:
		d.Alarms++
	case EventExecDenied:
		d.Denied++
		if rec.Rule != "" {
			b.rule(rec.Rule, rec.Decision)
		}
	case EventToolCall:
		if rec.Phase == PhaseResult {
			if rec.Decision == "deny" && rec.Rule != "" { // denied below the parser
				b.rule(rec.Rule, "deny")
				d.Denied++
			}
			return
		}
		d.ToolCalls++
		if rec.Decision == "deny" {
			d.Denied++
		}
		if rec.Rule != "" {
			b.rule(rec.Rule, rec.Decision)
		}
	}
	if rec.Event == EventNet && rec.Rule != "" {
		b.rule(rec.Rule, rec.Decision)
	}
}

func (b *breakdown) rule(rule, decision string) {
	r := b.rules[rule]
	if r == nil {
		r = &RuleStats{Rule: rule, Decisions: map[string]int{}}
		b.rules[rule] = r
	}
	r.Calls++
	r.Decisions[decision]++
}

// fill sets s.Days (in date order) and s.Rules (most used first).
func (b *breakdown) fill(s *Stats) {
	sort.Strings(b.dayOrder)
	for _, d := range b.dayOrder {
		s.Days = append(s.Days, *b.days[d])
	}
	for _, r := range b.rules {
		s.Rules = append(s.Rules, *r)
	}
	sort.Slice(s.Rules, func(i, j int) bool {
		if s.Rules[i].Calls != s.Rules[j].Calls {
			return s.Rules[i].Calls > s.Rules[j].Calls
		}
		return s.Rules[i].Rule < s.Rules[j].Rule
	})
}

// writeBreakdown writes the by-day and by-rule tables.
func writeBreakdown(tw *tabwriter.Writer, s Stats) {
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	if len(s.Days) > 0 {
		p("\nby day (UTC):\n")
		p("  day\trecords\tsessions\tcalls\tdenied\tasked\tfailures\tnet\talarms\n")
		for _, d := range s.Days {
			p("  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", d.Day, d.Records, d.Sessions, d.ToolCalls, d.Denied, d.Asked, d.Failures, d.Net, d.Alarms)
		}
	}
	if len(s.Rules) > 0 {
		p("\nby rule:\n")
		for _, r := range s.Rules {
			p("  %s\t%d\t%s\n", clean(r.Rule, 60), r.Calls, countsText(r.Decisions))
		}
	}
}
