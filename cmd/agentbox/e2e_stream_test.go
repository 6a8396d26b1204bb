package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestRunStreamsToolCalls: the binary streams its model requests; two
// tool calls whose arguments arrive cut every 3 bytes, their fragments
// interleaved, are run whole and recorded whole in the audit log; a
// stream cut in the middle is retried, never the answer; --json-events
// carries the answer as model_delta events, and --no-stream asks for
// whole replies.
func TestRunStreamsToolCalls(t *testing.T) {
	testutil.RequireDocker(t)
	key := newKey(t)
	cmd := `printf 'streamed "ok" é\n' > streamed.txt; echo wrote`
	srv := agenttest.New(t,
		agenttest.Reply{Content: "Writing the file.", ToolCalls: []agenttest.Call{agenttest.Bash(cmd), agenttest.Read("existing.txt")}, ChunkBytes: 3, Interleave: true},
		agenttest.Reply{Content: "Done: the whole answer", Cut: true, ChunkBytes: 2},
		agenttest.Reply{Content: "Done: streamed.txt\nhas the line.", ChunkBytes: 4},
	)
	srv.Key = key
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "existing.txt"), "x\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")

	r := agentbox(t, modelEnv(srv, key), "run", "--no-memory", "--json-events", "--workspace", ws, "--audit", log, "write the file")
	if r.code != 0 {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "streamed.txt")); err != nil || string(b) != "streamed \"ok\" é\n" {
		t.Errorf("the assembled command did not run: %q %v", b, err)
	}
	var deltas strings.Builder
	var end struct{ Status, Answer string }
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Event, Text string
			Step        int
			Reset       bool
			Result      *struct{ Status, Answer string }
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		switch {
		case e.Event == "model_delta" && e.Reset:
			deltas.WriteString("<reset>")
		case e.Event == "model_delta":
			deltas.WriteString(e.Text)
		case e.Event == "end" && e.Result != nil:
			end = *e.Result
		}
	}
	if end.Status != "ok" || end.Answer != "Done: streamed.txt\nhas the line." {
		t.Errorf("end: %+v", end)
	}
	if got := deltas.String(); !strings.HasPrefix(got, "Writing the file.") || !strings.HasSuffix(got, "<reset>Done: streamed.txt\nhas the line.") {
		t.Errorf("model_delta events: %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !reqs[0].Request.Stream || !reqs[2].Request.Stream {
		t.Fatalf("%d requests; the first streamed: %v", len(reqs), len(reqs) > 0 && reqs[0].Request.Stream)
	}

	lines := readAuditLog(t, log)
	var sid string
	for _, l := range lines {
		if l.rec.Event == "session_start" {
			sid = l.rec.Session
		}
	}
	var gotCmd, gotPath string
	models := 0
	for _, rec := range sessionRecords(lines, sid) {
		switch {
		case rec.Event == "tool_call" && rec.Phase == "decision" && rec.Tool == "execute_bash":
			gotCmd, _ = rec.Args["command"].(string)
		case rec.Event == "tool_call" && rec.Phase == "decision" && rec.Tool == "read_file":
			gotPath, _ = rec.Args["path"].(string)
		case rec.Event == "model_call":
			models++
			if rec.PromptTokens <= 0 || rec.CompletionTokens != 10 {
				t.Errorf("model_call without the streamed usage: %+v", rec)
			}
		}
	}
	if gotCmd != cmd || gotPath != "existing.txt" {
		t.Errorf("audit log: command %q path %q, want the assembled calls", gotCmd, gotPath)
	}
	if models != 2 {
		t.Errorf("%d model_call records, want 2 (the cut stream is no model call)", models)
	}

	srv2 := agenttest.New(t, agenttest.Answer("whole"))
	srv2.Key = key
	r = agentbox(t, modelEnv(srv2, key), "run", "--no-memory", "--no-stream", "--json", "--workspace", ws, "--audit", log, "answer")
	if r.code != 0 || !strings.Contains(r.stdout, `"whole"`) {
		t.Fatalf("--no-stream: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if reqs := srv2.Requests(); len(reqs) != 1 || reqs[0].Request.Stream {
		t.Errorf("--no-stream streamed: %+v", reqs)
	}
}
