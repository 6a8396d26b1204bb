package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func fullRecord() Record {
	return Record{
		V: 1, Seq: 7, Time: t0, Session: "7f3c", Event: EventToolCall,
		Task: "t", PolicyPath: "p", PolicySHA256: "ps", Image: "i", ImageID: "ii", ContainerID: "c",
		Workspace: "w", WorkspaceMode: "rw", Learn: Ptr(true), Model: "m", Version: "v", User: "u", Host: "h",
		CallID: "call_1", Tool: "execute_bash", Args: map[string]any{"command": "ls -la", "n": 1.5},
		Phase: PhaseResult, Decision: "allow", Rule: "commands.allow[0]", DecidedBy: DecidedByPolicy, Reason: "r",
		ExitCode: Ptr(0), TimedOut: Ptr(false), DurationMS: Ptr[int64](3), OutputBytes: Ptr[int64](812),
		OutputSHA256: "os", OutputPreview: "op", Truncated: Ptr(true),
		Step: 2, PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, FinishReason: "stop",
		Status: "done", Steps: 5, Answer: "a", Files: []FileChange{{Path: "x", SHA256: "s", Bytes: 1, Change: ChangeAdded}},
		Error: "e", Approver: "ap", Scope: ScopeSession,
		TaskID: "t1", Batch: "b1", Plan: []string{"a", "b"}, Text: "hello", Prompt: "Allow?", NetHost: "example.com", NetPort: 443,
		NetAddr: "93.184.216.34:443", BytesUp: Ptr[int64](10), BytesDown: Ptr[int64](20),
		NetMethod: "POST", NetPath: "/repos/x", NetStatus: 201, RuleText: "{host: x, action: allow}", Secret: "TOKEN", BodySHA256: "bs", OTLPDropped: 3,
		Argv: []string{"rm", "-f", "x"}, PID: 42, Exe: "/usr/bin/rm", Parents: []string{"bash (1)"}, Path: ".git/config", What: "changed", Action: "restored",
		Programs: []Program{{Name: "ls", Count: 2}}, ProgramsDropped: 1,
		Prev: GenesisPrev, MAC: "mac",
	}
}

func TestRecordRoundTripAndKeyOrder(t *testing.T) {
	r := fullRecord()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, back) {
		t.Fatalf("round trip:\n%+v\n%+v", r, back)
	}
	// Every struct field is encoded, in field order, under its tag name.
	typ := reflect.TypeOf(r)
	pos := -1
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		p := bytes.Index(b[pos+1:], []byte(`"`+name+`":`))
		if p >= 0 {
			p += pos + 1
		}
		if p < 0 || p < pos {
			t.Fatalf("key %q missing or out of order in %s", name, b)
		}
		pos = p
	}
	if !bytes.HasPrefix(b, []byte(`{"v":1,"seq":7,"time":"2026-11-29T18:00:00.123456Z","session":"7f3c","event":"tool_call",`)) {
		t.Fatalf("prefix: %s", b)
	}
	// Optional fields are omitted.
	b, _ = json.Marshal(Record{V: 1, Seq: 1, Time: t0, Session: "s", Event: EventError, Prev: GenesisPrev})
	if want := `{"v":1,"seq":1,"time":"2026-11-29T18:00:00.123456Z","session":"s","event":"error","prev":"` + GenesisPrev + `"}`; string(b) != want {
		t.Fatalf("got %s", b)
	}
}

func TestTimeAlwaysSixDigits(t *testing.T) {
	r := Record{Time: t0.Truncate(1e9)}
	b, _ := json.Marshal(r)
	if !bytes.Contains(b, []byte(`"time":"2026-11-29T18:00:00.000000Z"`)) {
		t.Fatalf("got %s", b)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", "quote\" back\\slash", "nl\ncr\rtab\tnul\x00esc\x1b del\x7f",
		"bad utf8 \xff\xfe end", "truncated rune \xe2\x82", "line sep \u2028 para \u2029",
		"<html>&amp;</html>", `{"forged":"json"}` + "\n" + `{"v":1}`, "emoji 😀 é",
	} {
		want, _ := marshalValue(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s want %s", s, got, want)
		}
		if bytes.IndexByte(appendString(nil, s), '\n') >= 0 {
			t.Errorf("%q: raw newline", s)
		}
	}
}

func TestParseHead(t *testing.T) {
	var h head
	line := []byte(`{"v":1,"seq":42,"time":"x","session":"s\u0031","event":"tool_call","args":{"a":[1,{"b":"}"}],"c":null},"prev":"p","mac":"m"}`)
	if !parseHead(line, &h) || h.seq != 42 || string(h.session) != "s1" || string(h.event) != "tool_call" || string(h.prev) != "p" || !h.hasMAC || string(h.mac) != "m" {
		t.Fatalf("%+v", h)
	}
	for _, bad := range []string{``, `{`, `{"seq":1`, `{"seq":"1"}`, `{"seq":1,}`, `{"a":"x}`, `{"a":tru}`, `[1]`, `{"a":1} x`, "{\"a\":\"\x01\"}"} {
		if parseHead([]byte(bad), &h) && h.hasSeq {
			t.Errorf("%q parsed", bad)
		}
	}
}
