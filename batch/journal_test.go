package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/session"
)

// TestJournalRecovery: a torn last line is cut; a journalled end gives the
// result back, a session_end in the audit log rebuilds it, a start alone
// is interrupted; a rerun's start supersedes an older results line.
func TestJournalRecovery(t *testing.T) {
	path := filepath.Join(t.TempDir(), journalName)
	body := `{"event":"start","id":"a","session":"s1","time":"2026-01-01T00:00:00Z"}
{"event":"end","id":"a","session":"s1","time":"2026-01-01T00:00:01Z","result":{"id":"a","status":"ok","session":"s1"}}
{"event":"start","id":"b","session":"s2","time":"2026-01-01T00:00:00Z"}
{"event":"start","id":"c","session":"s3","time":"2026-01-01T00:00:00Z"}
{"event":"start","id":"d","session":"s4","time":"2026-01-01T00:00:00Z"}
{"event":"end","id":"d","sess`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openJournal(path, false); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("a journal with entries without --resume: %v", err)
	}
	j, _, err := openJournal(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.put(journalEntry{Event: journalStart, ID: "e", Session: "s5"}); err != nil {
		t.Fatal(err)
	}
	j.close()
	j, states, err := openJournal(path, true)
	if err != nil {
		t.Fatal(err)
	}
	j.close()
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), `"sess`+"\n") || !strings.HasSuffix(string(data), "\n") || strings.Count(string(data), "\n") != 6 {
		t.Errorf("torn line not cut before appending:\n%s", data)
	}
	done := map[string]Line{"e": {ID: "e", Status: "error", Session: "s0"}} // e's rerun (s5) started after it
	ended := map[string]audit.Record{"s2": {Event: "session_end", Status: "step_limit", Steps: 4}}
	rebuilt, intr := recovered(states, done, ended)
	if rebuilt["a"].Status != "ok" || rebuilt["b"].Status != "step_limit" || rebuilt["b"].Exit != session.ExitLimit || rebuilt["b"].Session != "s2" {
		t.Errorf("rebuilt %+v", rebuilt)
	}
	for _, id := range []string{"c", "d", "e"} {
		if _, ok := intr[id]; !ok {
			t.Errorf("%s is not interrupted: %+v", id, intr)
		}
	}
	if len(rebuilt) != 2 || len(intr) != 3 {
		t.Errorf("rebuilt %v interrupted %v", rebuilt, intr)
	}
}
