package docker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

// runtimes are the OCI runtimes the exec-time layer is tested under: the
// engine's default (runc) and gVisor's runsc when the engine has it.
func runtimes(t *testing.T, f func(t *testing.T, runtime string)) {
	t.Run("runc", func(t *testing.T) { f(t, "") })
	t.Run("runsc", func(t *testing.T) {
		requireRuntime(t, "runsc")
		f(t, "runsc")
	})
}

// requireRuntime skips (or, with AGENTBOX_REQUIRE_RUNSC=1, fails) when the
// engine does not have the named runtime.
func requireRuntime(t *testing.T, name string) {
	t.Helper()
	info, err := testutil.RequireDocker(t).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Runtimes[name]; !ok {
		if os.Getenv("AGENTBOX_REQUIRE_RUNSC") == "1" {
			t.Fatalf("the engine has no %s runtime", name)
		}
		t.Skipf("the engine has no %s runtime", name)
	}
}

func execOut(t *testing.T, s sandbox.Session, cmd string) sandbox.ExecResult {
	t.Helper()
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: cmd, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res
}

// The executor is PID 1: no engine init runs, and it is the process a
// command would have to attach to.
func TestExecutorIsPID1(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		cfg := testutil.Config(t, t.TempDir())
		cfg.Runtime = rt
		s := testutil.StartWith(t, cfg)
		// /proc/1/cmdline is readable whatever the dumpable flag.
		res := execOut(t, s, `tr '\0' ' ' < /proc/1/cmdline`)
		if !strings.Contains(string(res.Output), "/.agentbox/agentbox executor") {
			t.Fatalf("PID 1 is %q, want the executor", res.Output)
		}
	})
}

// Orphans whose parents never wait for them are reaped: a daemonised
// process that leaves zombie children behind is killed after the call,
// the zombies become PID 1's, and PID 1 reaps them.
func TestZombiesReaped(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		cfg := testutil.Config(t, t.TempDir())
		cfg.Runtime = rt
		s := testutil.StartWith(t, cfg)
		// The orphan (setsid, double fork) forks three children that exit
		// at once, then execs sleep: nobody waits for them.
		res := execOut(t, s, `setsid -f bash -c 'sleep 0.2 & sleep 0.2 & sleep 0.2 & exec sleep 30' </dev/null >/dev/null 2>&1
			for i in $(seq 50); do z=$(grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l); [ "$z" -ge 3 ] && break; sleep 0.1; done
			echo zombies=$z`)
		if !strings.Contains(string(res.Output), "zombies=3") {
			t.Fatalf("the setup made no zombies: exit %d %q", res.ExitCode, res.Output)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			res = execOut(t, s, `grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l`)
			if strings.TrimSpace(string(res.Output)) == "0" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("zombies left after the call: %q", res.Output)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// No command can ptrace PID 1 (the executor) or read its memory, file
// descriptors or environment (the session key came through its stdin).
func TestCannotTracePID1(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		cfg := testutil.Config(t, t.TempDir())
		cfg.Runtime = rt
		s := testutil.StartWith(t, cfg)
		// gVisor (release 20221219 here) checks the dumpable flag for
		// ptrace and /proc/PID/mem but not for /proc/PID/fd or environ:
		// a command there can open the executor's stdin/stdout. Frames
		// it writes fail the HMAC (the session fails closed) and it
		// cannot read the key (sent in the first frame, before any
		// command ran): a denial of service, not an escape.
		gvisorOpen := map[string]bool{"fds": rt == "runsc", "environ": rt == "runsc", "stdin": rt == "runsc", "stdout": rt == "runsc"}
		for _, c := range []struct{ name, cmd string }{
			{"ptrace attach", `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH
print("attach", r, ctypes.get_errno())
sys.exit(0 if r == -1 else 1)'`},
			{"ptrace seize", `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(0x4206, 1, None, None)  # PTRACE_SEIZE
sys.exit(0 if r == -1 else 1)'`},
			{"process_vm_readv", `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(16)
local = iov(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iov(0x400000, 16)
r = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
sys.exit(0 if r == -1 else 1)'`},
			{"mem", `! head -c 16 /proc/1/mem`},
			// (uid 0 may list the directory; no link can be followed)
			{"fds", `! readlink /proc/1/fd/0`},
			{"cwd", `! ls /proc/1/cwd/`},
			{"environ", `! cat /proc/1/environ`},
			{"stdin", `! (exec 3>/proc/1/fd/0)`},
			{"stdout", `! (exec 3>/proc/1/fd/1)`},
		} {
			res := execOut(t, s, c.cmd)
			if res.ExitCode != 0 && gvisorOpen[c.name] {
				t.Logf("%s: reachable under gVisor (known): %q", c.name, res.Output)
				continue
			}
			if res.ExitCode != 0 {
				t.Errorf("%s: PID 1 is reachable (exit %d): %q", c.name, res.ExitCode, res.Output)
			}
		}
	})
}
