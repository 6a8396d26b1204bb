package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowPrintsAppendedRecords(t *testing.T) {
	path := sampleLog(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuf
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, &out, path, Filter{Tool: "execute_bash"}, ShowOptions{}, 10*time.Millisecond)
	}()
	waitFor(t, "the existing records", func() bool { return strings.Contains(out.String(), "sudo rm -rf /") })

	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Append(&Record{Session: "s3", Event: EventToolCall, Tool: "execute_bash", Phase: PhaseDecision, Decision: "deny",
		Args: map[string]any{"command": "echo appended-later"}, Rule: "commands.deny[1]"})
	w.Append(&Record{Session: "s3", Event: EventModelCall, Step: 1}) // filtered out
	waitFor(t, "the appended record", func() bool { return strings.Contains(out.String(), "appended-later") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "model_call") {
		t.Errorf("the filter was not applied:\n%s", out.String())
	}
}

func TestTailerPartialLinesAndShrink(t *testing.T) {
	path := sampleLog(t, Options{})
	tl := NewTailer(path)
	lines, err := tl.Next()
	if err != nil || len(lines) != 17 || lines[16].N != 17 || lines[0].Rec == nil {
		t.Fatalf("%d %v", len(lines), err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"half":`)
	if lines, _ := tl.Next(); len(lines) != 0 {
		t.Fatalf("an incomplete line was returned: %v", lines)
	}
	f.WriteString("1}\n")
	f.Close()
	if lines, _ := tl.Next(); len(lines) != 1 || lines[0].N != 18 || string(lines[0].Raw) != `{"half":1}` {
		t.Fatalf("%+v", lines)
	}
	os.Truncate(path, 10)
	if _, err := tl.Next(); !errors.Is(err, ErrLogShrank) {
		t.Fatalf("want ErrLogShrank, got %v", err)
	}
}
