package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// Nothing escapes the exec-time tracer: a child made with CLONE_UNTRACED
// (clone, or clone3's struct) would execute programs the command rules
// never see. The profile refuses both, from python and from a static C
// program, as root and as another user, on runc and gVisor: the program
// falls back to fork, and the denied program its child executes is
// stopped at its exec (reported) and never runs (no marker on the host).
func TestUntracedChildRefused(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		for _, user := range []string{"0:0", "4321:4321"} {
			t.Run(strings.ReplaceAll(user, ":", "_"), func(t *testing.T) {
				ws := t.TempDir()
				sandboxtest.BuildUntracedC(t, ws, "untraced")
				if err := os.WriteFile(filepath.Join(ws, "untraced.py"), []byte(sandboxtest.UntracedPython), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, 4321, 4321)
				}); err != nil {
					t.Fatal(err)
				}
				cfg := testutil.Config(t, ws)
				cfg.Runtime, cfg.User, cfg.Pids = rt, user, 128
				cfg.Enforce = sandbox.Enforcement{Policy: []byte(enforcePolicy), PolicyName: "test.yaml"}
				s := testutil.StartWith(t, cfg)
				for _, c := range []struct{ name, cmd string }{
					{"python", "python3 untraced.py /usr/bin/touch /workspace/marker-py"},
					{"c", "./untraced /usr/bin/touch /workspace/marker-c"},
					// glibc starts threads with clone3 and falls back to
					// clone only on ENOSYS (gVisor's profile answered EPERM).
					{"thread", `python3 -c 'import threading; t = threading.Thread(target=print, args=("clone=Operation not permitted clone3=Function not implemented",)); t.start(); t.join()'; /usr/bin/touch /workspace/marker-thread`},
				} {
					res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: c.cmd, Timeout: 20 * time.Second})
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					out := strings.ReplaceAll(string(res.Output), "_", " ")
					if !strings.Contains(out, "clone=Operation not permitted clone3=Function not implemented") {
						t.Errorf("%s: the untraced clone was not refused: %q", c.name, res.Output)
					}
					if _, err := os.Stat(filepath.Join(ws, "marker-"+c.name)); err == nil {
						t.Errorf("%s: the denied program ran (marker on the host); output %q", c.name, res.Output)
					}
					if len(res.DeniedExecs) != 1 || !strings.HasSuffix(res.DeniedExecs[0].Argv[0], "touch") || !deniedByRule(res.DeniedExecs[0].Rule) {
						t.Errorf("%s: denied execs %+v, want the touch", c.name, res.DeniedExecs)
					}
				}
			})
		}
	})
}
