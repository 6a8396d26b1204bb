// Package sandboxtest is the conformance suite every sandbox.Session
// implementation must pass: command semantics, timeouts and escapes, output
// caps, resource limits, and file edge cases. Run it from a test with Run.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Start starts a fresh session on a fresh workspace and returns it with the
// workspace's host path. The session must be closed by test cleanup.
type Start func(t *testing.T) (sandbox.Session, string)

// Run runs the whole suite.
func Run(t *testing.T, start Start) { RunWith(t, start, Options{}) }

// Options declare how an isolation tier legitimately differs from the
// suite's expectations, each with its reason.
type Options struct {
	// FailsClosed names Limits cases ("fork-bomb", "memory-hog") in which
	// the tier may end the whole sandbox instead of the command: the call
	// must then fail with sandbox.ErrExecutor (the session is dead and
	// says so). Values are the reasons.
	FailsClosed map[string]string
}

// RunWith runs the whole suite with a tier's declared differences.
func RunWith(t *testing.T, start Start, opts Options) {
	t.Run("Exec", func(t *testing.T) { runExec(t, start) })
	t.Run("Timeouts", func(t *testing.T) { runTimeouts(t, start) })
	t.Run("Limits", func(t *testing.T) { runLimits(t, start, opts) })
	t.Run("Files", func(t *testing.T) { runFiles(t, start) })
	t.Run("Symlinks", func(t *testing.T) { runSymlinks(t, start) })
	t.Run("Stream", func(t *testing.T) { runStream(t, start) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Quick bounds a command that should end at once. The bound catches a
// hang (a command waiting on stdin, an executor that never answers), not
// slowness: under gVisor on a loaded 2-core host the sentry can stall for
// seconds, and a 10 s bound failed a CI run on "printf ”".
const Quick = time.Minute

// Exec runs a command and fails the test on a sandbox error.
func Exec(t *testing.T, s sandbox.Session, cmd string, timeout time.Duration) sandbox.ExecResult {
	t.Helper()
	res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Command: cmd, Timeout: timeout})
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	return res
}

// processes lists the command names of every process in the sandbox other
// than the listing shell itself.
func processes(t *testing.T, s sandbox.Session) []string {
	t.Helper()
	res := Exec(t, s, `for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] && continue; c=$(cat $p/comm 2>/dev/null) && echo "$c"; done`, Quick)
	var out []string
	for _, l := range strings.Fields(string(res.Output)) {
		if l != "cat" {
			out = append(out, l)
		}
	}
	return out
}

func runExec(t *testing.T, start Start) {
	s, _ := start(t)
	cases := []struct {
		cmd  string
		code int
		out  string
	}{
		{"true", 0, ""},
		{"exit 3", 3, ""},
		{"echo out; echo err >&2; exit 1", 1, "out\nerr\n"},
		{"printf ''", 0, ""},
		{"cat", 0, ""}, // stdin is closed: cat must not wait
		{"pwd", 0, "/workspace\n"},
		{"kill -TERM $$", 143, ""},
		{"command-that-does-not-exist 2>/dev/null", 127, ""},
		{`printf '\x00\xff\n'`, 0, "\x00\xff\n"},
	}
	for _, c := range cases {
		res := Exec(t, s, c.cmd, Quick)
		if res.ExitCode != c.code || string(res.Output) != c.out || res.TimedOut || res.Truncated {
			t.Errorf("%q: got exit %d output %q timed_out=%v truncated=%v; want exit %d output %q", c.cmd, res.ExitCode, res.Output, res.TimedOut, res.Truncated, c.code, c.out)
		}
		if res.OutputBytes != int64(len(c.out)) || len(res.OutputSHA) != 64 {
			t.Errorf("%q: output_bytes %d sha %q", c.cmd, res.OutputBytes, res.OutputSHA)
		}
	}
	// Background processes left behind are killed after the call.
	res := Exec(t, s, "sleep 300 & echo started", Quick)
	if res.ExitCode != 0 || !strings.Contains(string(res.Output), "started") {
		t.Fatalf("background start: %+v", res)
	}
	if p := processes(t, s); contains(p, "sleep") {
		t.Errorf("background sleep survived the call: %v", p)
	}
}

func runTimeouts(t *testing.T, start Start) {
	s, _ := start(t)
	escapes := map[string]string{
		"plain":       "echo partial; sleep 300",
		"background":  "sleep 300 & echo partial; wait",
		"nohup":       "nohup sleep 300 >/dev/null 2>&1 & echo partial; sleep 300",
		"setsid":      "setsid sleep 300 & echo partial; setsid sleep 301; sleep 300",
		"double-fork": "( (sleep 300 &) & ); echo partial; sleep 300",
		"trap-term":   "trap '' TERM INT HUP; echo partial; while :; do sleep 1; done",
	}
	for name, cmd := range escapes {
		t.Run(name, func(t *testing.T) {
			res := Exec(t, s, cmd, 1500*time.Millisecond)
			if !res.TimedOut {
				t.Fatalf("not timed out: %+v", res)
			}
			if !strings.Contains(string(res.Output), "partial") {
				t.Errorf("partial output lost: %q", res.Output)
			}
			if p := processes(t, s); contains(p, "sleep") || contains(p, "bash") && countOf(p, "bash") > 1 {
				t.Errorf("processes survived the timeout: %v", p)
			}
		})
	}
}

// failedClosed runs cmd where the tier may end the whole sandbox (see
// Options.FailsClosed). It reports true, with a fresh session in *s, when
// the sandbox died as allowed; false with the result when it did not.
func failedClosed(t *testing.T, start Start, s *sandbox.Session, opts Options, name, cmd string, timeout time.Duration) (sandbox.ExecResult, bool) {
	t.Helper()
	reason, allowed := opts.FailsClosed[name]
	if !allowed {
		return Exec(t, *s, cmd, timeout), false
	}
	res, err := (*s).Exec(ctxT(t), sandbox.ExecRequest{Command: cmd, Timeout: timeout})
	if err == nil {
		return res, false
	}
	if !errors.Is(err, sandbox.ErrExecutor) {
		t.Fatalf("%s: the sandbox may end here (%s) but must fail closed with ErrExecutor; got %v", name, reason, err)
	}
	t.Logf("%s: the sandbox ended, failing closed (%v): %s", name, err, reason)
	if _, err := (*s).Exec(ctxT(t), sandbox.ExecRequest{Command: "true", Timeout: 10 * time.Second}); !errors.Is(err, sandbox.ErrExecutor) {
		t.Errorf("%s: the dead session answered: %v", name, err)
	}
	*s, _ = start(t)
	return res, true
}

func runLimits(t *testing.T, start Start, opts Options) {
	s, _ := start(t)
	t.Run("flood", func(t *testing.T) {
		res := Exec(t, s, "head -c 50000000 /dev/zero | tr '\\0' x", 30*time.Second)
		if !res.Truncated || res.OutputBytes != 50000000 {
			t.Fatalf("flood: truncated=%v bytes=%d", res.Truncated, res.OutputBytes)
		}
		if len(res.Output) > 64<<10 {
			t.Errorf("kept %d bytes of output; the cap was not applied", len(res.Output))
		}
		if !bytes.Contains(res.Output, []byte("bytes omitted")) {
			t.Errorf("no truncation marker")
		}
	})
	t.Run("endless-yes", func(t *testing.T) {
		res := Exec(t, s, "yes", 2*time.Second)
		if !res.TimedOut || !res.Truncated || res.OutputBytes < 1<<20 || len(res.Output) > 64<<10 {
			t.Fatalf("yes: timed_out=%v truncated=%v bytes=%d kept=%d", res.TimedOut, res.Truncated, res.OutputBytes, len(res.Output))
		}
	})
	t.Run("fork-bomb", func(t *testing.T) {
		// It times out or dies of EAGAIN; either way the sandbox must
		// survive (or, where the tier says so, fail closed).
		if _, dead := failedClosed(t, start, &s, opts, "fork-bomb", "bomb(){ bomb | bomb & }; bomb", 5*time.Second); dead {
			return
		}
		after := Exec(t, s, "echo alive", Quick)
		if strings.TrimSpace(string(after.Output)) != "alive" {
			t.Fatalf("sandbox unusable after fork bomb: %+v", after)
		}
		if p := processes(t, s); countOf(p, "bash") > 1 {
			t.Errorf("fork bomb survived: %d bash processes", countOf(p, "bash"))
		}
	})
	t.Run("memory-hog", func(t *testing.T) {
		res, dead := failedClosed(t, start, &s, opts, "memory-hog", `python3 -c 'b = bytearray(4 * 1024**3); print("allocated")'`, 60*time.Second)
		if dead {
			return
		}
		if !(res.OOMKilled || res.ExitCode == 137 || res.ExitCode == 1 && strings.Contains(string(res.Output), "MemoryError")) {
			t.Fatalf("memory hog not stopped: %+v %q", res, res.Output)
		}
		if res.ExitCode == 137 && !res.OOMKilled {
			t.Errorf("killed by OOM but not reported as oom_killed")
		}
	})
}

func contains(xs []string, s string) bool { return countOf(xs, s) > 0 }

func countOf(xs []string, s string) int {
	n := 0
	for _, x := range xs {
		if x == s {
			n++
		}
	}
	return n
}

// fileErr asserts err is a *sandbox.FileError (the model's problem, not a
// sandbox failure) whose message contains want.
func fileErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	var fe *sandbox.FileError
	if !errors.As(err, &fe) {
		t.Errorf("%s: want a FileError, got %v", what, err)
		return
	}
	if !strings.Contains(fe.Msg, want) {
		t.Errorf("%s: error %q does not mention %q", what, fe.Msg, want)
	}
}

func runFiles(t *testing.T, start Start) {
	s, ws := start(t)
	ctx := ctxT(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	for name, content := range map[string][]byte{
		"binary.bin":          all,
		"empty":               {},
		"large.txt":           large,
		"deep/a/b/c.txt":      []byte("nested"),
		"caf\xe9-latin1.txt":  []byte("non-UTF-8 name"),
		"/workspace/abs.txt":  []byte("absolute"),
		"./dot/../dotted.txt": []byte("cleaned"),
	} {
		w, err := s.WriteFile(ctx, sandbox.WriteRequest{Path: name, Content: content})
		if err != nil {
			t.Fatalf("write %q: %v", name, err)
		}
		if w.Bytes != int64(len(content)) {
			t.Errorf("write %q: %d bytes reported", name, w.Bytes)
		}
		r, err := s.ReadFile(ctx, sandbox.ReadRequest{Path: name})
		if err != nil {
			t.Fatalf("read %q: %v", name, err)
		}
		if !bytes.Equal(r.Content, content) || r.Size != int64(len(content)) || r.SHA256 != w.SHA256 {
			t.Errorf("round trip of %q: got %d bytes (size %d), want %d", name, len(r.Content), r.Size, len(content))
		}
		host := filepath.Join(ws, strings.TrimPrefix(filepath.Clean(strings.TrimPrefix(name, "/workspace/")), "/"))
		if b, err := os.ReadFile(host); err != nil || !bytes.Equal(b, content) {
			t.Errorf("%q on the host: %v", name, err)
		}
	}
	r, err := s.ReadFile(ctx, sandbox.ReadRequest{Path: "large.txt", Offset: 16, Limit: 10})
	if err != nil || string(r.Content) != "0123456789" {
		t.Errorf("offset/limit read: %q %v", r.Content, err)
	}
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "missing.txt"})
	fileErr(t, "missing file", err, "no such file")
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "deep"})
	fileErr(t, "directory", err, "not a regular file")
	Exec(t, s, "mkfifo fifo && echo a > h1 && ln h1 h2 && head -c 40000000 /dev/zero > big", 30*time.Second)
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "fifo"})
	fileErr(t, "fifo", err, "not a regular file")
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "fifo", Content: []byte("x")})
	fileErr(t, "write to fifo", err, "not a regular file")
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "h1", Content: []byte("x")})
	fileErr(t, "hard link", err, "hard-linked")
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "big"})
	fileErr(t, "over the cap", err, "cap")
	for _, p := range []string{"../escape.txt", "/etc/agentbox-test", "a/../../x", ""} {
		_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: p, Content: []byte("x")})
		fileErr(t, "write "+p, err, "")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escape.txt")); err == nil {
		t.Errorf("write escaped the workspace")
	}
	// The session still works after every refusal.
	if res := Exec(t, s, "echo ok", Quick); string(res.Output) != "ok\n" {
		t.Fatalf("session broken after file errors: %q", res.Output)
	}
}

func runSymlinks(t *testing.T, start Start) {
	s, ws := start(t)
	ctx := ctxT(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")))
	must(os.Symlink("/", filepath.Join(ws, "rootdir")))
	must(os.Symlink("nowhere", filepath.Join(ws, "dangling")))
	must(os.WriteFile(filepath.Join(ws, "target.txt"), []byte("inside"), 0o644))
	must(os.Symlink("target.txt", filepath.Join(ws, "inner-link")))
	must(os.Symlink("../..", filepath.Join(ws, "up")))

	_, err := s.ReadFile(ctx, sandbox.ReadRequest{Path: "passwd"})
	fileErr(t, "symlink to /etc/passwd", err, "")
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "rootdir/etc/hostname"})
	fileErr(t, "symlink to / then etc/hostname", err, "")
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "up/etc/hostname"})
	fileErr(t, "relative symlink leaving the workspace", err, "")
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "dangling", Content: []byte("x")})
	fileErr(t, "dangling symlink as write target", err, "symlink")
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "inner-link", Content: []byte("x")})
	fileErr(t, "write through an inner symlink", err, "symlink")
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "rootdir/tmp/x", Content: []byte("x")})
	fileErr(t, "write below a symlink to /", err, "")
	if _, err := os.Lstat(filepath.Join(ws, "nowhere")); err == nil {
		t.Errorf("write followed the dangling symlink")
	}
	r, err := s.ReadFile(ctx, sandbox.ReadRequest{Path: "inner-link"})
	if err != nil || string(r.Content) != "inside" || r.Resolved != "target.txt" {
		t.Errorf("read through an inner symlink: %q resolved %q, %v", r.Content, r.Resolved, err)
	}
	// A symlink to a denied file stays denied: the executor checks the
	// path it resolves to.
	must(os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=1"), 0o600))
	must(os.Symlink(".env", filepath.Join(ws, "innocent.txt")))
	rules := &sandbox.FileRules{Allow: []string{"**"}, Deny: []string{".env"}}
	_, err = s.ReadFile(ctx, sandbox.ReadRequest{Path: "innocent.txt", Rules: rules})
	if !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("symlink to a denied file: want ErrDenied, got %v", err)
	}
	must(os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
	must(os.Symlink(".git/hooks", filepath.Join(ws, "hooks")))
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "hooks/pre-commit", Content: []byte("x"), Rules: &sandbox.FileRules{Allow: []string{"**"}, Deny: []string{".git/hooks/**"}}})
	if !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("write via a symlinked directory into a denied one: want ErrDenied, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("denied hook was written")
	}
	_, err = s.WriteFile(ctx, sandbox.WriteRequest{Path: "hooks/new/dir/x", Content: []byte("x"), Rules: &sandbox.FileRules{Allow: []string{"**"}, Deny: []string{".git/hooks/**"}}})
	if !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("write below a symlinked denied directory: want ErrDenied, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "new")); err == nil {
		t.Errorf("directories were created inside a denied directory")
	}
}
