package main_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/internal/testutil/browser"
	"github.com/chromedp/chromedp"
)

// TestViewerRealSession: `agentbox audit serve` (the real binary) on the
// log of a real session (an edit, a command that also plants a git hook,
// a push refused for want of a terminal), opened in headless Chromium
// with ?live=0: the page finishes loading; the call's changes row lists
// its files with size and sha256 and the held hook with its hazard; the
// held filter shows only it; the refused push is one row; the
// verification page says in one statement what a signed checkpoint
// proved, and that a tampered copy no longer extends it.
//
// With AGENTBOX_SCREENSHOTS=DIR it writes README's screenshots there:
//
//	AGENTBOX_SCREENSHOTS=$PWD/docs go test ./cmd/agentbox -run TestViewerRealSession
func TestViewerRealSession(t *testing.T) {
	testutil.RequireDocker(t)
	ctx := browser.Start(t)
	dir, ws := t.TempDir(), filepath.Join(t.TempDir(), "proj")
	writeFile(t, filepath.Join(ws, "README.md"), "# parser\n", 0o644)
	writeFile(t, filepath.Join(ws, "parser", "quote.go"), "package parser\n", 0o644)
	writeFile(t, filepath.Join(ws, "tools", "pre-commit"), "#!/bin/sh\ngofmt -l . && go vet ./...\n", 0o755)
	writeFile(t, filepath.Join(ws, "tools", "install-hooks.sh"), "#!/bin/sh\ncat tools/pre-commit > .git/hooks/pre-commit\n", 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// The hook is written by a script the command runs (a command naming
	// .git/hooks is refused before it runs): the staging holds it.
	plant := `printf 'package parser\n\nimport "testing"\n\nfunc TestQuoted(t *testing.T) {}\n' > parser/quote_test.go && sh tools/install-hooks.sh`
	script := writeFile(t, filepath.Join(dir, "script.yaml"), `turns:
  - content: "I will read the parser first."
    tool_calls: [{name: read_file, args: {path: parser/quote.go}}]
  - tool_calls: [{name: write_file, args: {path: parser/quote.go, content: "package parser\n\n// Quote quotes s.\nfunc Quote(s string) string { return \"'\" + s + \"'\" }\n"}}]
  - tool_calls: [{name: execute_bash, args: {command: `+yamlQuote(plant)+`}}]
  - tool_calls: [{name: execute_bash, args: {command: "git push origin main"}}]
  - content: "Quote is written and tested; the push needs your approval."
`, 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	env := baseEnv(t)
	r := abCmd{fullEnv: env, dir: ws}.run(t, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", script, "make Quote quote its argument")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	session := sessionOf(t, r.stderr)
	// A second session in the same log, for the sessions list.
	if e := (abCmd{fullEnv: env, dir: ws}).run(t, "exec", "--workspace", ws, "--audit", log, "--", "grep -rn Quote parser"); e.code != 0 {
		t.Fatalf("exec: %d\n%s%s", e.code, e.stdout, e.stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("the hook reached the workspace: the session shows nothing held")
	}

	// A signed checkpoint of the log, and a copy of the log with one
	// command rewritten after it was signed.
	skey := filepath.Join(dir, "sign.key")
	vkey := strings.TrimSpace(abCmd{fullEnv: env}.run(t, "audit", "keygen", "audit.example", "--out", skey).stdout)
	c := abCmd{fullEnv: env}.run(t, "audit", "checkpoint", log, "--sign-key", skey)
	if c.code != 0 {
		t.Fatalf("checkpoint: %d %s", c.code, c.stderr)
	}
	cp := writeFile(t, filepath.Join(dir, "checkpoint"), c.stdout, 0o600)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(b), "git push origin main", "git status --short", 1)
	if tampered == string(b) {
		t.Fatal("the log does not hold the push command")
	}
	copied := writeFile(t, filepath.Join(dir, "audit-copy.jsonl"), tampered, 0o600)

	url := serveViewer(t, env, log, copied, "--checkpoint", cp, "--verify-key", vkey)

	// The session's timeline, static.
	browser.Navigate(t, ctx, url+"?live=0#/f0/s/"+session)
	browser.Count(t, ctx, `#timeline .ev[data-event="changes"]`, 2)
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && !document.getElementById("live").checked`)); err != nil || !v {
		t.Fatalf("?live=0: the page is still loading or follows the log (%v)", err)
	}
	edit, hook := changesRow(t, ctx, "parser/quote.go"), changesRow(t, ctx, "parser/quote_test.go")
	sum := regexp.MustCompile(`[0-9a-f]{8}`)
	if !strings.Contains(edit, "modified") || !strings.Contains(edit, "1 file") || !sum.MatchString(edit) || !strings.Contains(edit, "was ") {
		t.Errorf("the edit's changes row does not list its file (kind, path, size, sha256 and the one before): %q", edit)
	}
	for _, s := range []string{"added", "parser/quote_test.go", "1 held", ".git/hooks/pre-commit", "files.write.deny[0]", "held"} {
		if !strings.Contains(hook, s) {
			t.Errorf("the command's changes row lacks %q: %q", s, hook)
		}
	}
	// The held filter shows the held hook only.
	browser.SetFilter(t, ctx, "f-kind", "held", "change")
	browser.Count(t, ctx, "#timeline .ev", 1)
	if got := browser.Text(t, ctx, "#timeline .ev"); !strings.Contains(got, ".git/hooks/pre-commit") || strings.Contains(got, "parser/quote.go ") {
		t.Errorf("the held filter shows %q", got)
	}
	browser.SetFilter(t, ctx, "f-kind", "", "change")
	// The push refused for want of a terminal is one row.
	pushRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#timeline .ev")].map(e => e.textContent).filter(t => t.includes("git push origin main"))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(pushRows) != 1 || !strings.Contains(pushRows[0], "no one could be asked (no terminal)") {
		t.Errorf("the refused push is on %d rows, want 1 with the approval's answer in it: %q", len(pushRows), pushRows)
	}
	shoot(t, ctx, "audit-timeline.png", `window.scrollTo(0, [...document.querySelectorAll('#timeline .ev[data-event="changes"]')].pop().getBoundingClientRect().top + window.scrollY - 220)`)

	// One statement per log on the verification page.
	browser.Navigate(t, ctx, url+"?live=0#/f0/verify")
	browser.Count(t, ctx, ".verdict-card .statement", 2)
	good, bad := browser.Text(t, ctx, `.verdict-card[data-file="0"] .statement`), browser.Text(t, ctx, `.verdict-card[data-file="1"] .statement`)
	for _, s := range []string{"verified", "records is intact", "are exactly those of the checkpoint signed by audit.example", "not verified"} {
		if !strings.Contains(good, s) {
			t.Errorf("the intact log's statement lacks %q: %q", s, good)
		}
	}
	if strings.Contains(good, "--checkpoint") || strings.Contains(good, "✗") {
		t.Errorf("the intact log's statement contradicts itself: %q", good)
	}
	if !strings.Contains(bad, "NOT extended") || strings.Contains(bad, "records are exactly those") {
		t.Errorf("the tampered copy's statement: %q", bad)
	}
	shoot(t, ctx, "audit-verify.png", "")

	browser.Navigate(t, ctx, url+"?live=0#/f0/")
	browser.Count(t, ctx, "#sessions tbody tr.row", 2)
	shoot(t, ctx, "audit-sessions.png", "")
}

// changesRow is the text of the timeline's changes row that names path.
func changesRow(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline .ev[data-event="changes"]')].map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if strings.Contains(r, path+" ") || strings.HasSuffix(r, path) || strings.Contains(r, path+"\n") {
			return r
		}
	}
	for _, r := range rows {
		if strings.Contains(r, path) {
			return r
		}
	}
	t.Fatalf("no changes row names %s: %q", path, rows)
	return ""
}

// serveViewer starts `agentbox audit serve` on logs and returns its URL.
func serveViewer(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"audit", "serve"}, args...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/\S*`).FindString(sc.Text()); m != "" {
				found <- m
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-found:
		return strings.TrimSuffix(u, "/") + "/"
	case <-time.After(time.Minute):
		t.Fatal("audit serve did not print its URL within a minute")
		return ""
	}
}

// shoot writes a screenshot of the page (after js, if any) to
// $AGENTBOX_SCREENSHOTS/name when that is set.
func shoot(t *testing.T, ctx context.Context, name, js string) {
	t.Helper()
	dir := os.Getenv("AGENTBOX_SCREENSHOTS")
	if dir == "" {
		return
	}
	if js != "" {
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			t.Fatal(err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
