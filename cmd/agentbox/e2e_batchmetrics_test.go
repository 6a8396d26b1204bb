package main_test

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestBatchMetricsAndHeartbeat scrapes --metrics-addr while a batch runs
// (queued, running, done by status, tasks/min, slot waits) and checks that
// piped output names a long task in a heartbeat line.
func TestBatchMetricsAndHeartbeat(t *testing.T) {
	testutil.RequireDocker(t)
	tasks := batchFixture(t, 4, 1, "sleep 4; echo slow > out.txt")
	cmd := exec.Command(testutil.Binary(t), "batch", tasks, "-j", "1", "--no-pool", "--metrics-addr", "127.0.0.1:0", "--heartbeat", "1s",
		"--output", filepath.Join(t.TempDir(), "out"), "--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	cmd.Env = append(baseEnv(t), "AGENTBOX_RUNTIME_DIR="+t.TempDir())
	errb := &testutil.LockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:[0-9]+/metrics)`)
	var url string
	testutil.Eventually(t, time.Minute, "the metrics address", func() bool {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	scrape := func() string {
		resp, err := http.Get(url)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var mid string
	testutil.Eventually(t, 2*time.Minute, "a scrape with one task done, one running, two queued", func() bool {
		mid = scrape()
		return strings.Contains(mid, `status="ok"} 1`) && regexp.MustCompile(`agentbox_batch_tasks_running\{batch="[0-9a-f]+"\} 1`).MatchString(mid) &&
			regexp.MustCompile(`agentbox_batch_tasks_queued\{batch="[0-9a-f]+"\} 2`).MatchString(mid)
	})
	for _, m := range []string{"# TYPE agentbox_batch_tasks_done_total counter", "agentbox_batch_tasks_per_minute{", "agentbox_batch_slot_waits_total{", "agentbox_batch_slot_waiting{"} {
		if !strings.Contains(mid, m) {
			t.Errorf("metrics lack %q:\n%s", m, mid)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batch: %v\n%s", err, errb.String())
	}
	if !regexp.MustCompile(`batch: still running: t0[1-3] \([0-9.]+s\); [0-9]/4 done`).MatchString(errb.String()) {
		t.Errorf("no heartbeat line for the long tasks:\n%s", errb.String())
	}
}
