package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func showString(t *testing.T, path string, f Filter, o ShowOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := Show(&b, mustOpen(t, path), f, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestShowTimeline(t *testing.T) {
	path := sampleLog(t, Options{})
	got := showString(t, path, Filter{Session: "sess-aaa"}, ShowOptions{})
	want := `2026-11-29 18:00:00.123  sess-aaa  session_start  task "fix the failing test"  image agentbox/base:latest  model gpt-4o-mini  workspace /home/u/proj  mode rw  policy /home/u/agentbox.yaml  user u  host box
2026-11-29 18:00:01.123  sess-aaa  model_call     step 1  tokens 1200+85=1285  finish tool_calls  1.2s
2026-11-29 18:00:02.123  sess-aaa  tool_call      execute_bash  ls -la  → ALLOW commands.allow[0]
2026-11-29 18:00:02.623  sess-aaa  tool_result    execute_bash  exit 0  3ms  12 B out
2026-11-29 18:00:03.123  sess-aaa  tool_call      execute_bash  sudo rm -rf /  → DENY commands.deny[0]: sudo: matched commands.deny[0]
2026-11-29 18:00:04.123  sess-aaa  tool_call      execute_bash  make test  → ALLOW commands.default (by user)
2026-11-29 18:00:04.323  sess-aaa  approval       call_3  execute_bash  → ALLOW  by u
2026-11-29 18:00:05.123  sess-aaa  tool_result    execute_bash  exit 2  1.5s  20 B out
2026-11-29 18:00:06.123  sess-aaa  session_end    status done  steps 3  1 files changed  answer "fixed"
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	col := showString(t, path, Filter{Decision: "deny"}, ShowOptions{Color: true})
	if strings.Count(col, "\n") != 2 || !strings.Contains(col, "\x1b[31mDENY\x1b[0m") {
		t.Fatalf("colour deny:\n%q", col)
	}
}

func TestShowFilters(t *testing.T) {
	path := sampleLog(t, Options{})
	count := func(f Filter) int {
		return strings.Count(showString(t, path, f, ShowOptions{JSON: true}), "\n")
	}
	for _, c := range []struct {
		f    Filter
		want int
	}{
		{Filter{}, 17},
		{Filter{Session: "sess-bbbbbbbb-2"}, 8},
		{Filter{Tool: "execute_bash"}, 12},                    // per session: 5 tool_call records + 1 approval
		{Filter{Decision: "deny"}, 2},                         // the denied call of each session
		{Filter{Decision: "allow", Tool: "execute_bash"}, 10}, // per session: 2 allowed calls, their results, 1 approval
		{Filter{Grep: "make test"}, 2},
		{Filter{Since: at(100), Until: at(102)}, 2},
		{Filter{Until: at(0.5)}, 1},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%+v: got %d want %d", c.f, got, c.want)
		}
	}
	// JSON output is the raw lines: they still verify as a prefix of the log.
	all := showString(t, path, Filter{}, ShowOptions{JSON: true})
	raw, _ := os.ReadFile(path)
	if all != string(raw) {
		t.Fatal("JSON output differs from the stored lines")
	}
}

func TestShowEscapesTerminalControl(t *testing.T) {
	path := writeLog(t, Options{}, &Record{Time: t0, Session: "s", Event: EventToolCall, Tool: "execute_bash", Phase: PhaseDecision,
		Decision: "allow", Args: map[string]any{"command": "echo \x1b]0;pwned\x07\x1b[2J\u202e done\nrm x"}})
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{broken\n")
	f.Close()
	got := showString(t, path, Filter{}, ShowOptions{})
	if strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, `echo \u001b]0;pwned\u0007\u001b[2J\u202e done\nrm x`) {
		t.Fatalf("%q", got)
	}
	if !strings.Contains(got, "line 2: unreadable record") {
		t.Fatalf("bad line not mentioned: %q", got)
	}
}

func TestScanAndReadAll(t *testing.T) {
	path := sampleLog(t, Options{})
	recs, err := ReadAll(mustOpen(t, path))
	if err != nil || len(recs) != 17 || recs[4].Decision != "deny" || recs[16].Seq != 17 {
		t.Fatalf("%v %d", err, len(recs))
	}
	var lines []int
	stop := os.ErrClosed
	err = Scan(mustOpen(t, path), func(line int, rec Record) error {
		lines = append(lines, line)
		if line == 3 {
			return stop
		}
		return nil
	})
	if err != stop || len(lines) != 3 {
		t.Fatalf("%v %v", err, lines)
	}
}

func TestComputeStats(t *testing.T) {
	path := sampleLog(t, Options{})
	s, err := ComputeStats(mustOpen(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != 17 || len(s.Sessions) != 2 || s.Decisions["allow"] != 4 || s.Decisions["deny"] != 2 ||
		s.DecidedBy["user"] != 2 || s.Events[EventToolCall] != 10 || s.FailureN != 2 ||
		len(s.TopDenied) != 1 || s.TopDenied[0] != (Count{"execute_bash: sudo rm -rf /", 2}) ||
		s.Sessions[0].Ended != true || s.Sessions[1].Ended || s.Sessions[0].Tokens != 1285 ||
		s.Failures[0].Summary != "make test" || s.Failures[0].Detail != "exit 2" || s.Failures[0].Line != 8 ||
		len(s.Tools) != 1 || s.Tools[0].Calls != 6 || s.Tools[0].Failed != 2 {
		js, _ := json.MarshalIndent(s, "", " ")
		t.Fatalf("%s", js)
	}
	var b bytes.Buffer
	s.WriteText(&b)
	want := `records: 17 (2026-11-29 18:00:00 → 2026-11-29 18:01:45 UTC, 1m45s)
events: approval 2, model_call 2, session_end 1, session_start 2, tool_call 10
decisions: allow 4, deny 2
decided by: policy 4, user 2

tools:
  execute_bash  calls 6  allow 4, deny 2  failed 2

sessions: 2 (1 never ended)
  sess-aaa  2026-11-29 18:00:00  done       3 steps  3 calls  1 denied  1 failures  1285 tokens  "fix the failing test"
  sess-bbb  2026-11-29 18:01:40  NOT ENDED  0 steps  3 calls  1 denied  1 failures  1285 tokens  "fix the failing test"

top denied:
  2  execute_bash: sudo rm -rf /

failures: 2
  line 8   sess-aaa  execute_bash  exit 2  make test
  line 17  sess-bbb  execute_bash  exit 2  make test

by day (UTC):
  day         records  sessions  calls  denied  asked  failures  net  alarms
  2026-11-29  17       2         6      2       2      2         0    0

by rule:
  commands.allow[0]  2  allow 2
  commands.default   2  allow 2
  commands.deny[0]   2  deny 2
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := s.WriteJSON(&b); err != nil || !json.Valid(b.Bytes()) {
		t.Fatal(err)
	}
}

// fakeDecider decides by command prefix.
type fakeDecider map[string]string

func (f fakeDecider) DecideCall(tool string, args map[string]any) (string, string) {
	cmd, _ := args["command"].(string)
	for prefix, d := range f {
		if strings.HasPrefix(cmd, prefix) {
			return d, "fake[" + prefix + "]"
		}
	}
	return "ask", "fake.default"
}

func TestReplay(t *testing.T) {
	path := writeLog(t, Options{}, sampleSession("sess-aaaaaaaa-1", 0, true)...)
	// Same decisions as recorded: no change.
	same := fakeDecider{"ls": "allow", "sudo": "deny", "make": "ask"}
	if ch, err := Replay(mustOpen(t, path), same); err != nil || len(ch) != 0 {
		t.Fatalf("%v %+v", err, ch)
	}
	stricter := fakeDecider{"ls": "deny", "sudo": "deny", "make": "deny"}
	ch, err := Replay(mustOpen(t, path), stricter)
	if err != nil || len(ch) != 2 ||
		ch[0] != (Change{Line: 3, Session: "sess-aaaaaaaa-1", CallID: "call_1", Tool: "execute_bash", Summary: "ls -la", Old: "allow", OldRule: "commands.allow[0]", New: "deny", NewRule: "fake[ls]"}) ||
		ch[1].Line != 6 || ch[1].Old != "ask" || ch[1].Outcome != "allow (user)" || ch[1].New != "deny" {
		t.Fatalf("%v %+v", err, ch)
	}
	looser := fakeDecider{"ls": "allow", "sudo": "allow", "make": "allow"}
	ch, _ = Replay(mustOpen(t, path), looser)
	if len(ch) != 2 || ch[0].Line != 5 || ch[0].Old != "deny" || ch[0].New != "allow" || ch[1].Line != 6 {
		t.Fatalf("%+v", ch)
	}
	var b bytes.Buffer
	WriteChanges(&b, ch, false)
	want := `line 5  sess-aaa  execute_bash  sudo rm -rf /  deny commands.deny[0]                    → allow fake[sudo]
line 6  sess-aaa  execute_bash  make test      ask commands.default, then allow (user)  → allow fake[make]
2 recorded call(s) would be decided differently
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteChanges(&b, nil, true)
	if b.String() != "[]\n" {
		t.Fatalf("%q", b.String())
	}
	b.Reset()
	WriteChanges(&b, nil, false)
	if !strings.HasPrefix(b.String(), "no recorded call") {
		t.Fatal(b.String())
	}
}
