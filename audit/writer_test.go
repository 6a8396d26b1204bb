package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestAppendChainsAndFills(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "audit.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	args := map[string]any{"command": "echo hi"}
	var recs []*Record
	for i := range 3 {
		r := &Record{Session: "s", Event: EventToolCall, Tool: "execute_bash", Args: args, Phase: PhaseDecision, Decision: "allow"}
		if i == 2 {
			r.Time = time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("X", 3600))
		}
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	lines := readLines(t, path)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	prev := GenesisPrev
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.V != 1 || r.Seq != int64(i+1) || r.Prev != prev || recs[i].Seq != r.Seq || recs[i].Prev != prev || !recs[i].Time.Equal(r.Time) {
			t.Fatalf("line %d: %+v (caller's %+v)", i+1, r, recs[i])
		}
		prev = sha(l)
	}
	if !strings.Contains(lines[2], `"time":"2026-01-02T02:04:05.678901Z"`) {
		t.Fatalf("time not UTC micro: %s", lines[2])
	}
	rep := verifyFile(t, path, nil, "")
	if !rep.Intact || rep.Records != 3 || rep.Head != sha(lines[2]) || rep.Sessions != 1 {
		t.Fatalf("%+v", rep)
	}
	if w.Path() != path {
		t.Fatalf("path %s", w.Path())
	}
	w.Close()
	if err := w.Append(&Record{}); err != ErrClosed {
		t.Fatalf("append after close: %v", err)
	}
}

func TestOpenModesAndRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "audit.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode())
	}
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(path, link)
	if _, err := Open(link, Options{}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlink accepted: %v", err)
	}
	loose := filepath.Join(dir, "loose.jsonl")
	os.WriteFile(loose, nil, 0o600)
	os.Chmod(loose, 0o666)
	if _, err := Open(loose, Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group-writable log accepted: %v", err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("directory accepted")
	}
}

func TestAppendNeverBreaksALine(t *testing.T) {
	out := "line1\nline2\r\n\x00\x1b[31m\xff\xfe" + `"},"forged":{"v":1}` + "\n{\"v\":1,\"seq\":99}\n"
	path := writeLog(t, Options{}, &Record{Session: "s", Event: EventToolCall, Phase: PhaseResult, OutputPreview: out,
		Args: map[string]any{"command": "printf '\xff\n'"}})
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	recs, err := ReadAll(strings.NewReader(lines[0] + "\n"))
	if err != nil || len(recs) != 1 {
		t.Fatal(err)
	}
	want := strings.ToValidUTF8(out, "\uFFFD")
	want = strings.Replace(want, "\uFFFD", "\uFFFD\uFFFD", 1) // one U+FFFD per invalid byte
	if recs[0].OutputPreview != want || recs[0].Args["command"] != "printf '\uFFFD\n'" {
		t.Fatalf("got %q / %q", recs[0].OutputPreview, recs[0].Args["command"])
	}
}

func TestAppendBoundsFields(t *testing.T) {
	big := strings.Repeat("x", 10000)
	files := make([]FileChange, maxFiles+5)
	for i := range files {
		files[i] = FileChange{Path: fmt.Sprint("f", i), Change: ChangeAdded}
	}
	in := &Record{Session: "s", Event: EventSessionEnd, Task: big, Answer: "é" + big, Files: files,
		Args: map[string]any{"content": big, "nested": []any{map[string]any{"k": big}}}}
	path := writeLog(t, Options{PreviewBytes: 100}, in)
	recs, _ := ReadAll(mustOpen(t, path))
	r := recs[0]
	if r.Task != strings.Repeat("x", 100)+"…[truncated 9900 bytes]" {
		t.Fatalf("task %q", r.Task)
	}
	if r.Answer != "é"+strings.Repeat("x", 98)+"…[truncated 9902 bytes]" {
		t.Fatalf("answer %q", r.Answer)
	}
	sum := sha(big)
	if r.Args["content"] != strings.Repeat("x", 100)+" …[10000 bytes, sha256 "+sum+"]" {
		t.Fatalf("content %q", r.Args["content"])
	}
	if r.Args["nested"].([]any)[0].(map[string]any)["k"] != r.Args["content"] {
		t.Fatal("nested arg not bounded")
	}
	if len(r.Files) != maxFiles+1 || r.Files[maxFiles].Path != "…[5 more files not listed]" {
		t.Fatalf("files: %d %+v", len(r.Files), r.Files[len(r.Files)-1])
	}
	if len(in.Args["content"].(string)) != 10000 || len(in.Files) != maxFiles+5 {
		t.Fatal("caller's record modified")
	}
	// Many arguments: the whole args object becomes a summary.
	many := map[string]any{}
	for i := range 100 {
		many[fmt.Sprint("k", i)] = strings.Repeat("y", 1000)
	}
	path = writeLog(t, Options{}, &Record{Session: "s", Event: EventToolCall, Args: many})
	recs, _ = ReadAll(mustOpen(t, path))
	if s, _ := recs[0].Args["_summary"].(string); len(recs[0].Args) != 1 || !strings.Contains(s, "bytes, sha256") {
		t.Fatalf("args not summarised: %d keys", len(recs[0].Args))
	}
}

func mustOpen(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestAppendKeyedMAC(t *testing.T) {
	path := writeLog(t, Options{Key: testKey}, &Record{Session: "s", Event: EventError, Error: "boom"})
	line := readLines(t, path)[0]
	var r Record
	json.Unmarshal([]byte(line), &r)
	canon := line[:len(line)-macSuffixLen] + "}"
	if !strings.HasSuffix(line, `,"mac":"`+r.MAC+`"}`) || len(r.MAC) != 64 {
		t.Fatalf("mac not last: %s", line)
	}
	r.MAC = ""
	b, _ := appendRecord(nil, &r, true)
	if string(b) != canon {
		t.Fatalf("canonical bytes differ:\n%s\n%s", b, canon)
	}
	if rep := verifyFile(t, path, testKey, ""); !rep.Intact || !rep.KeyUsed {
		t.Fatalf("%+v", rep)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w1, _ := Open(path, Options{})
	w2, _ := Open(path, Options{}) // a second Writer on the same file, as another process would
	defer w1.Close()
	defer w2.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			w := w1
			if g%2 == 1 {
				w = w2
			}
			for i := range 25 {
				if err := w.Append(&Record{Session: fmt.Sprint("g", g), Event: EventModelCall, Step: i + 1}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if rep := verifyFile(t, path, nil, ""); !rep.Intact || rep.Records != 200 || rep.Sessions != 8 {
		t.Fatalf("%+v %v", rep, rep.First)
	}
}

// TestHelperProcess is run by other tests as a separate process.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("AUDIT_HELPER")
	if mode == "" {
		t.Skip("helper process only")
	}
	path := os.Getenv("AUDIT_LOG")
	session := os.Getenv("AUDIT_SESSION")
	w, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	n, _ := strconv.Atoi(os.Getenv("AUDIT_N"))
	if mode == "loop" {
		w.Append(&Record{Session: session, Event: EventSessionStart, Task: "loop"})
		n = 1 << 30
	}
	for i := range n {
		err := w.Append(&Record{Session: session, Event: EventToolCall, CallID: fmt.Sprint("call_", i), Tool: "execute_bash",
			Phase: PhaseResult, ExitCode: Ptr(0), OutputPreview: strings.Repeat("output ", 50)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	}
	w.Close()
	os.Exit(0)
}

func helper(t *testing.T, mode, path, session string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "AUDIT_HELPER="+mode, "AUDIT_LOG="+path, "AUDIT_SESSION="+session, fmt.Sprint("AUDIT_N=", n))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestTwoProcessesAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 fsyncs")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a := helper(t, "append", path, "proc-a", 1000)
	b := helper(t, "append", path, "proc-b", 1000)
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path, nil, "")
	if !rep.Intact || rep.Records != 2000 || rep.Sessions != 2 {
		t.Fatalf("%+v %v", rep, rep.First)
	}
	// Both processes' records interleave somewhere (not a requirement, a sanity check that they ran concurrently).
	t.Logf("verify: %s", rep)
}

// A writer killed with SIGKILL: everything it wrote verifies; its session
// shows as never ended. With one write(2) per record the kill is expected
// to land between records (intact); should it interrupt a write, the
// fragment must be the last line and reported as truncated. Appending
// afterwards works and the log verifies the same way.
func TestKilledWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := helper(t, "loop", path, "killed-session", 0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	check := func(rep VerifyReport) {
		t.Helper()
		if rep.Records < 50 {
			t.Fatalf("only %d records", rep.Records)
		}
		if !rep.Intact && (rep.First.Kind != DamageTruncated) {
			t.Fatalf("want intact or truncated, got %v", rep.First)
		}
		if len(rep.Unended) != 1 || rep.Unended[0] != "killed-session" {
			t.Fatalf("unended: %v", rep.Unended)
		}
	}
	rep := verifyFile(t, path, nil, "")
	check(rep)
	t.Logf("after kill: %s", rep)
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(&Record{Session: "next", Event: EventError, Error: "after the kill"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	check(verifyFile(t, path, nil, ""))
}

// A line cut by a crash mid-write: the next Append starts a new line and
// chains to the fragment; Verify names the fragment as truncated and
// nothing else.
func TestAppendAfterTruncatedLine(t *testing.T) {
	path := sampleLog(t, Options{})
	frag := `{"v":1,"seq":18,"time":"2026-11-29T18:0`
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(frag)
	f.Close()
	rep := verifyFile(t, path, nil, "")
	if rep.Intact || rep.First.Kind != DamageTruncated || rep.First.Line != 18 {
		t.Fatalf("%v", rep.First)
	}
	w, _ := Open(path, Options{})
	r := &Record{Session: "sess-bbbbbbbb-2", Event: EventSessionEnd, Status: "crashed"}
	if err := w.Append(r); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if r.Seq != 19 || r.Prev != sha(frag) {
		t.Fatalf("seq %d prev %s", r.Seq, r.Prev)
	}
	lines := readLines(t, path)
	if len(lines) != 19 || lines[17] != frag {
		t.Fatalf("fragment glued: %q", lines[17:])
	}
	rep = verifyFile(t, path, nil, "")
	if rep.Intact || rep.First.Kind != DamageTruncated || rep.First.Line != 18 || len(rep.Unended) != 0 {
		t.Fatalf("%+v %v", rep, rep.First)
	}
}
