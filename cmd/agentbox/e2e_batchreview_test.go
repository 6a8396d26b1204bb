package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestBatchHeldAndAlarmsShown: a task that plants a host-run file (.envrc:
// held: files.write denies it under the default policy) and runs a program nobody predicted (an
// unexpected_exec alarm) finishes ok but is never shown as a plain ok:
// the table marks it ok! with its held and alarm counts, the results line
// carries held, alarms and review, the metrics count them while the batch
// runs, and the held content is kept: `changes SESSION --held` lists it.
// --resume then says what it skipped and why.
func TestBatchHeldAndAlarmsShown(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "in.txt"), "in\n", 0o644)
	plant := `python3 -c 'open(".envrc","w").write("touch /tmp/x\n")'; echo ok > out.txt; printf 'ls >/dev/null\n' > gen.sh; bash gen.sh`
	writeFile(t, filepath.Join(dir, "review.yaml"), "turns:\n  - tool_calls: [{name: execute_bash, args: {command: "+yamlQuote(plant)+"}}]\n  - content: finished\n", 0o644)
	writeFile(t, filepath.Join(dir, "slow.yaml"), "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"sleep 4; echo slow > out.txt\"}}]\n  - content: finished\n", 0o644)
	tasks := writeFile(t, filepath.Join(dir, "tasks.yaml"), "tasks:\n  - {id: planter, task: plant, workspace: ws, script: review.yaml}\n  - {id: slow, task: wait, workspace: ws, script: slow.yaml}\n", 0o644)
	out := filepath.Join(t.TempDir(), "results")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	env := append(baseEnv(t), "AGENTBOX_RUNTIME_DIR="+t.TempDir())
	cmd := exec.Command(testutil.Binary(t), "batch", tasks, "-j", "1", "--no-pool", "--approve", "allow", "--metrics-addr", "127.0.0.1:0",
		"--output", out, "--audit", log)
	cmd.Env = env
	errb, outb := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	cmd.Stderr, cmd.Stdout = errb, outb
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
	var mid string
	testutil.Eventually(t, 2*time.Minute, "a scrape after the planter finished", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		mid = string(b)
		return strings.Contains(mid, `status="ok"} 1`)
	})
	for _, re := range []string{`agentbox_batch_tasks_to_review_total\{batch="[0-9a-f]+"\} 1`, `agentbox_batch_held_changes_total\{batch="[0-9a-f]+"\} [1-9]`, `agentbox_batch_alarms_total\{batch="[0-9a-f]+"\} [1-9]`} {
		if !regexp.MustCompile(re).MatchString(mid) {
			t.Errorf("metrics lack %s:\n%s", re, mid)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batch: %v\n%s\n%s", err, outb.String(), errb.String())
	}
	table := outb.String()
	row := regexp.MustCompile(`(?m)^planter +ok! +0 +\d+ +\d+ +\S+ +\d+ +([1-9]\d*) +([1-9]\d*) `)
	if !row.MatchString(table) {
		t.Errorf("the planter's row is not marked ok! with its held and alarm counts:\n%s", table)
	}
	if !regexp.MustCompile(`(?m)^slow +ok +0 +\d+ +\d+ +\S+ +\d+ +0 +0 `).MatchString(table) || !strings.Contains(table, "1 to review (marked !") {
		t.Errorf("the table does not tell the clean task from the one to review:\n%s", table)
	}
	if !strings.Contains(errb.String(), "review: 1 held change") {
		t.Errorf("the planter's progress line does not say what to review:\n%s", errb.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, raw := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l struct {
			ID, Status, Session, Review string
			Held, Alarms                int
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		if l.ID == "planter" {
			session = l.Session
			if l.Status != "ok" || l.Held < 1 || l.Alarms < 1 || !strings.Contains(l.Review, "--held") {
				t.Errorf("the planter's results line: %s", raw)
			}
		} else if l.Held != 0 || l.Alarms != 0 || l.Review != "" {
			t.Errorf("the clean task's results line: %s", raw)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, ".envrc")); err == nil {
		t.Fatal("the held .envrc reached the source workspace")
	}
	held := abCmd{fullEnv: env}.run(t, "changes", session, "--held")
	if held.code != 0 || !strings.Contains(held.stdout, "HELD") || !strings.Contains(held.stdout, ".envrc") || !strings.Contains(held.stdout, "files.write.deny") {
		t.Errorf("changes %s --held: %d\n%s%s", session, held.code, held.stdout, held.stderr)
	}
	kept := regexp.MustCompile(`held content is kept under (\S+)`).FindStringSubmatch(held.stdout)
	if kept == nil {
		t.Fatalf("changes --held does not say where the content is: %s", held.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(kept[1], "1", ".envrc")); err != nil || !strings.Contains(string(b), "touch /tmp/x") {
		t.Errorf("the held .envrc's content is not kept under %s: %v %q", kept[1], err, b)
	}

	again := abCmd{fullEnv: env}.run(t, "batch", tasks, "--resume", "--output", out, "--audit", log)
	if again.code != 0 || !strings.Contains(again.stderr, "resuming: skipping 2 finished earlier (2 ok); running 0") {
		t.Errorf("--resume does not say what it skipped: %d\n%s", again.code, again.stderr)
	}
}
