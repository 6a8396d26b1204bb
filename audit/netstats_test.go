package audit

import (
	"bytes"
	"strings"
	"testing"
)

func TestStatsNet(t *testing.T) {
	recs := append(netRecords("sess-net-00000001"), netRecords("sess-net-00000002")[:1]...)
	path := writeLog(t, Options{}, recs...)
	st, err := ComputeStats(mustOpen(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Net) != 2 || st.Net[0].Host != "pypi.org" || st.Net[0].Attempts != 2 || st.Net[0].Decisions["allow"] != 2 ||
		st.Net[1].Host != "evil.test" || st.Net[1].Decisions["deny"] != 1 || st.Events[EventNet] != 3 {
		t.Fatalf("net stats %+v", st.Net)
	}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "network:") || !strings.Contains(b.String(), "evil.test") {
		t.Errorf("text:\n%s", b.String())
	}
}
