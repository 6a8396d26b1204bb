package main_test

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestSessionsShareHostCap: under a host-wide cap of 1, one user's exec
// holds the slot; another user's exec and a long-running mcp server (with
// --metrics-addr) wait for it, each saying once where it is in the queue,
// and run only once the first is gone; the mcp metrics show the wait and
// then the call.
func TestSessionsShareHostCap(t *testing.T) {
	testutil.RequireDocker(t)
	slots := "AGENTBOX_RUNTIME_DIR=" + t.TempDir()
	user := func() []string { return append(baseEnv(t), "AGENTBOX_MAX_SANDBOXES=1", slots) }
	ws := t.TempDir()

	a := exec.Command(testutil.Binary(t), "exec", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--", "echo started; sleep 60")
	a.Env = user()
	aOut, _ := a.StdoutPipe()
	a.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	if line, _ := bufio.NewReader(aOut).ReadString('\n'); strings.TrimSpace(line) != "started" {
		t.Fatalf("the first exec did not start: %q", line)
	}

	b := exec.Command(testutil.Binary(t), "exec", "--workspace", t.TempDir(), "--audit", filepath.Join(t.TempDir(), "b.jsonl"), "--", "echo b-ran")
	b.Env = user()
	bOut, bErr := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	b.Stdout, b.Stderr = bOut, bErr
	b.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })

	// b queues first (the queue is first come, first served): the mcp
	// server, which keeps its sandbox for its whole session, comes after.
	testutil.Eventually(t, time.Minute, "the second exec to wait for the slot", func() bool {
		return strings.Contains(bErr.String(), "waiting for a sandbox slot")
	})

	m := exec.Command(testutil.Binary(t), "mcp", "--workspace", t.TempDir(), "--metrics-addr", "127.0.0.1:0", "--audit", filepath.Join(t.TempDir(), "m.jsonl"))
	m.Env = user()
	mIn, _ := m.StdinPipe()
	mOut, _ := m.StdoutPipe()
	mErr := &testutil.LockedBuffer{}
	m.Stderr = mErr
	m.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Process.Kill(); _ = m.Wait() })
	_, _ = io.WriteString(mIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	var url string
	testutil.Eventually(t, time.Minute, "the mcp server's metrics address", func() bool {
		if s := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:[0-9]+/metrics)`).FindStringSubmatch(mErr.String()); s != nil {
			url = s[1]
		}
		return url != ""
	})
	scrape := func() string {
		resp, err := http.Get(url)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	testutil.Eventually(t, time.Minute, "the second exec and the mcp server to wait for the slot", func() bool {
		return strings.Contains(bErr.String(), "waiting for a sandbox slot") && strings.Contains(mErr.String(), "waiting for a sandbox slot") &&
			strings.Contains(scrape(), "agentbox_mcp_slot_waiting 1")
	})
	if bOut.String() != "" {
		t.Fatalf("the second exec ran while the first held the only slot: %q", bOut.String())
	}
	for _, e := range []string{bErr.String(), mErr.String()} {
		if n := strings.Count(e, "waiting for a sandbox slot"); n != 1 || !strings.Contains(e, "in the host's queue") {
			t.Errorf("waiting is said %d times (want once, with the place in the queue):\n%s", n, e)
		}
	}

	_ = a.Process.Signal(syscall.SIGTERM)
	_ = testutil.WaitCmd(t, a, 2*time.Minute, "the first exec after SIGTERM")
	if err := testutil.WaitCmd(t, b, 2*time.Minute, "the second exec after the slot was freed"); err != nil || strings.TrimSpace(bOut.String()) != "b-ran" {
		t.Fatalf("the second exec after the slot was freed: %v %q\n%s", err, bOut.String(), bErr.String())
	}
	_, _ = io.WriteString(mIn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_bash","arguments":{"command":"echo hi"}}}`+"\n")
	replied := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(mOut)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":2`) {
				replied <- true
				return
			}
		}
		replied <- false
	}()
	select {
	case ok := <-replied:
		if !ok {
			t.Fatalf("the mcp server ended before answering the call:\n%s", mErr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the mcp server did not answer the call within 2 minutes:\n%s", mErr.String())
	}
	metrics := scrape()
	for _, want := range []string{"agentbox_mcp_tool_calls_total 1", "agentbox_mcp_sandboxes_running 1", "agentbox_mcp_slot_waiting 0", "agentbox_mcp_slot_waits_total 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("mcp metrics lack %q:\n%s", want, metrics)
		}
	}
	_ = mIn.Close()
	if err := testutil.WaitCmd(t, m, 2*time.Minute, "the mcp server after stdin closed"); err != nil {
		t.Errorf("mcp: %v\n%s", err, mErr.String())
	}
}
