package audit

import (
	"strings"
	"testing"
)

// netFake decides net events by host; tool calls as fakeDecider.
type netFake struct {
	fakeDecider
	hosts map[string]string
}

func (f netFake) DecideNet(host string, port int, addr string) (string, string) {
	if d, ok := f.hosts[host]; ok {
		return d, "fake-net[" + host + "]"
	}
	return "deny", "network.allow"
}

func netRecords(id string) []*Record {
	return []*Record{
		{Time: at(1), Session: id, Event: EventNet, NetHost: "pypi.org", NetPort: 443, NetAddr: "151.101.0.223:443",
			Decision: "allow", Rule: "network.allow[0]", DurationMS: Ptr[int64](40), BytesUp: Ptr[int64](500), BytesDown: Ptr[int64](9000)},
		{Time: at(2), Session: id, Event: EventNet, NetHost: "evil.test", NetPort: 443,
			Decision: "deny", Rule: "network.allow", Reason: "evil.test:443 refused: not in network.allow", DurationMS: Ptr[int64](0)},
	}
}

func TestReplayNet(t *testing.T) {
	path := writeLog(t, Options{}, netRecords("sess-net-00000001")...)
	same := netFake{fakeDecider{}, map[string]string{"pypi.org": "allow"}}
	if ch, err := Replay(mustOpen(t, path), same); err != nil || len(ch) != 0 {
		t.Fatalf("same policy: %v %+v", err, ch)
	}
	swapped := netFake{fakeDecider{}, map[string]string{"evil.test": "allow"}}
	ch, err := Replay(mustOpen(t, path), swapped)
	if err != nil || len(ch) != 2 ||
		ch[0] != (Change{Line: 1, Session: "sess-net-00000001", Tool: "net", Summary: "pypi.org:443 (151.101.0.223:443)",
			Old: "allow", OldRule: "network.allow[0]", New: "deny", NewRule: "network.allow"}) ||
		ch[1].Line != 2 || ch[1].Old != "deny" || ch[1].New != "allow" || ch[1].NewRule != "fake-net[evil.test]" {
		t.Fatalf("%v %+v", err, ch)
	}
	// A decider without network rules denies every net event.
	ch, err = Replay(mustOpen(t, path), fakeDecider{})
	if err != nil || len(ch) != 1 || ch[0].Line != 1 || ch[0].New != "deny" {
		t.Fatalf("%v %+v", err, ch)
	}
}

func TestShowNet(t *testing.T) {
	recs := netRecords("sess-net-00000001")
	got := FormatRecord(recs[0], false)
	want := "2026-11-29 18:00:01.123  sess-net  net            pypi.org:443 (151.101.0.223:443)  → ALLOW network.allow[0]  up 500  down 9000  40ms"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := FormatRecord(recs[1], false); !strings.Contains(got, "→ DENY network.allow: evil.test:443 refused: not in network.allow") {
		t.Errorf("got %q", got)
	}
}
