package kubernetes

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/sandbox/transfer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testRuntime connects to the test cluster (see testutil.Kubeconfig); every
// pod it starts is gone when the test ends.
func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	t.Setenv("KUBECONFIG", testutil.Kubeconfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := Connect(ctx, Options{})
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	t.Cleanup(func() { _ = rt.CloseAll(context.Background()) })
	return rt
}

func startOn(t testing.TB, rt *Runtime, cfg sandbox.Config) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := rt.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting a sandbox pod: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*session)
}

// mirrored makes a pod's workspace behave like a mounted one for the
// contract suite, which writes to the host workspace behind the session's
// back and reads what the session wrote there: before each call the host's
// changes go in (copy_in of what changed on the host), after it the pod's
// come back (a pull). Production sessions copy in once and pull at the
// end; the suite checks the rest of the contract the same on both
// backends.
type mirrored struct {
	*session
	host transfer.Snap
}

func (m *mirrored) push(ctx context.Context) error {
	pr, pw := io.Pipe()
	var next transfer.Snap
	go func() {
		var err error
		next, _, err = transfer.PackChanges(pw, m.cfg.Workspace, m.host, 0, 0)
		pw.CloseWithError(err)
	}()
	_, err := m.CopyIn(ctx, pr, 0)
	pr.CloseWithError(errors.New("done"))
	if err == nil {
		m.host = next
	}
	return err
}

func (m *mirrored) pullBack(ctx context.Context) {
	if _, err := m.Pull(ctx); err == nil {
		m.host, _ = transfer.Snapshot(m.cfg.Workspace, 0)
	}
}

func (m *mirrored) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := m.push(ctx); err != nil {
		return sandbox.ExecResult{}, err
	}
	defer m.pullBack(ctx)
	return m.session.Exec(ctx, req)
}

func (m *mirrored) ReadFile(ctx context.Context, req sandbox.ReadRequest) (sandbox.ReadResult, error) {
	if err := m.push(ctx); err != nil {
		return sandbox.ReadResult{}, err
	}
	return m.session.ReadFile(ctx, req)
}

func (m *mirrored) WriteFile(ctx context.Context, req sandbox.WriteRequest) (sandbox.WriteResult, error) {
	if err := m.push(ctx); err != nil {
		return sandbox.WriteResult{}, err
	}
	defer m.pullBack(ctx)
	return m.session.WriteFile(ctx, req)
}

func starter(rt *Runtime, mirror bool) sandboxtest.Start {
	return func(t *testing.T) (sandbox.Session, string) {
		ws := t.TempDir()
		s := startOn(t, rt, sandbox.Config{Workspace: ws, WorkspaceCopy: true})
		if !mirror {
			return s, ws
		}
		host, err := transfer.Snapshot(ws, 0)
		if err != nil {
			t.Fatal(err)
		}
		return &mirrored{session: s, host: host}, ws
	}
}

func TestContractK8s(t *testing.T) {
	rt := testRuntime(t)
	sandboxtest.Run(t, starter(rt, true))
}

func TestHardeningK8s(t *testing.T) {
	rt := testRuntime(t)
	sandboxtest.RunHardening(t, starter(rt, false), map[string]sandboxtest.Difference{
		"mounts": {Want: "/workspace rw", Reason: "the executor is in the image (a pod cannot mount the host's binary); /workspace is the pod's emptyDir"},
	})
}

// A pod deleted under a session: the next call fails with a clear error
// (nothing hangs), and Close returns.
func TestPodDeletedUnderSession(t *testing.T) {
	rt := testRuntime(t)
	s := startOn(t, rt, sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := rt.cs.CoreV1().Pods(rt.opts.Namespace).Delete(ctx, s.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// The kubelet kills the container shortly after the object is gone:
	// every call returns, and one fails saying why.
	var err error
	for err == nil && ctx.Err() == nil {
		_, err = s.Exec(ctx, sandbox.ExecRequest{Command: "sleep 0.2", Timeout: 20 * time.Second})
	}
	if !errors.Is(err, sandbox.ErrExecutor) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("exec on a deleted pod: %v", err)
	}
	t.Logf("error: %v", err)
	if ctx.Err() != nil {
		t.Fatal("the call outlived its deadline")
	}
	cerr := s.Close(ctx)
	if !errors.Is(cerr, sandbox.ErrPull) {
		t.Fatalf("Close after the pod was deleted: %v, want the change set marked incomplete (ErrPull)", cerr)
	}
	if ctx.Err() != nil {
		t.Fatal("Close outlived its deadline")
	}
}

// A pod whose image is not on the node fails Start with the cluster's
// reason, as a missing image (exit 125), and leaves nothing behind.
func TestMissingImage(t *testing.T) {
	rt := testRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := sandbox.NewID()
	_, err := rt.Start(ctx, sandbox.Config{SessionID: id, Image: "agentbox/no-such-image:latest", Workspace: t.TempDir(), WorkspaceCopy: true})
	if !errors.Is(err, sandbox.ErrImageMissing) && !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("start with a missing image: %v", err)
	}
	if !strings.Contains(err.Error(), "no-such-image") {
		t.Fatalf("the error does not name the image: %v", err)
	}
	t.Logf("error: %v", err)
	if left, _ := rt.ListSandboxes(ctx, id); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// The workspace goes in (less read-denied paths), changes of every kind
// come back at Close, write-denied ones are dropped as alarms.
func TestWorkspaceRoundTripK8s(t *testing.T) {
	rt := testRuntime(t)
	ws := t.TempDir()
	for p, c := range map[string]string{"a.txt": "a\n", "gone.txt": "x\n", "dir/sub/f": "f\n", ".env": "SECRET=1\n", ".git/config": "[core]\n", "run.sh": "#!/bin/sh\n"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Symlink("a.txt", filepath.Join(ws, "link"))
	s := startOn(t, rt, sandbox.Config{Workspace: ws, WorkspaceCopy: true, ReadDeny: []string{".env"}, WriteDeny: []string{".git/config"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Exec(ctx, sandbox.ExecRequest{Command: `test -e .env && echo LEAKED; echo b >> a.txt; rm gone.txt; rm -r dir; mkdir -p new/d; echo n > new/d/n.txt; chmod +x run.sh; ln -sfn new link; echo evil >> .git/config; echo ok`})
	if err != nil || strings.TrimSpace(string(res.Output)) != "ok" {
		t.Fatalf("exec: %q %v", res.Output, err)
	}
	rep, err := s.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Alarms) != 1 || rep.Alarms[0].Path != ".git/config" || rep.Alarms[0].Action != "dropped" {
		t.Fatalf("alarms %+v", rep.Alarms)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(ws, p)); return string(b) }
	if read("a.txt") != "a\nb\n" || read("new/d/n.txt") != "n\n" || read(".git/config") != "[core]\n" || read(".env") != "SECRET=1\n" {
		t.Fatal("contents not as expected")
	}
	for _, p := range []string{"gone.txt", "dir"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s not removed", p)
		}
	}
	if fi, _ := os.Stat(filepath.Join(ws, "run.sh")); fi.Mode().Perm()&0o100 == 0 {
		t.Error("mode change not brought back")
	}
	if l, _ := os.Readlink(filepath.Join(ws, "link")); l != "new" {
		t.Errorf("symlink change not brought back: %q", l)
	}
}

// A pod the cluster cannot schedule fails Start at the deadline with the
// scheduler's reason; a RuntimeClass the cluster lacks fails at once.
func TestUnschedulableAndRuntimeClass(t *testing.T) {
	rt := testRuntime(t)
	rt.opts.StartTimeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := sandbox.NewID()
	_, err := rt.Start(ctx, sandbox.Config{SessionID: id, Workspace: t.TempDir(), WorkspaceCopy: true, MemoryBytes: 1 << 50})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "not scheduled") || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("unschedulable: %v", err)
	}
	t.Logf("error: %v", err)
	if left, _ := rt.ListSandboxes(ctx, id); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	_, err = rt.Start(ctx, sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true, Runtime: "no-such-class"})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "RuntimeClass") {
		t.Fatalf("missing RuntimeClass: %v", err)
	}
	t.Logf("error: %v", err)
}

// The node's RuntimeDefault profile lets a process set set-id bits; the
// executor's own filter (asked for in the hello) refuses them.
func TestSetIDRefusedK8s(t *testing.T) {
	rt := testRuntime(t)
	s := startOn(t, rt, sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true})
	res := sandboxtest.Exec(t, s, `echo x > f; chmod u+s f 2>/dev/null; echo "setuid=$?"; chmod g+s f 2>/dev/null; echo "setgid=$?"; chmod 700 f; echo "plain=$?"; stat -c %a f`, 20*time.Second)
	if got := strings.Join(strings.Fields(string(res.Output)), " "); got != "setuid=1 setgid=1 plain=0 700" {
		t.Fatalf("got %q", got)
	}
}
