package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// UntracedPython is a python program that tries to start a child the
// exec-time tracer does not follow (clone with CLONE_UNTRACED, then clone3
// with it), falling back to a plain fork; the child executes argv[1:]. It
// prints "clone=R clone3=R" (R: "ok" or the error), so a caller sees which
// way the child was made. Run as `python3 -c "$UntracedPython" PROG ARGS...`.
const UntracedPython = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr_clone = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
UNTRACED, SIGCHLD = 0x00800000, 17
def child():
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
def res(r):
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno()).replace(" ", "_")
pid = libc.syscall(nr_clone, ctypes.c_ulong(UNTRACED | SIGCHLD), 0, 0, 0, 0)
if pid == 0:
    child()
out = ["clone=" + res(pid)]
if pid < 0:
    args = (ctypes.c_uint64 * 8)(UNTRACED, 0, 0, 0, SIGCHLD, 0, 0, 0)
    pid = libc.syscall(435, ctypes.byref(args), ctypes.c_size_t(64))
    if pid == 0:
        child()
    out.append("clone3=" + res(pid))
if pid < 0:
    pid = os.fork()
    if pid == 0:
        child()
os.waitpid(pid, 0)
print(" ".join(out))
`

// untracedC is UntracedPython in C (built static, so that it runs in any
// image).
const untracedC = `#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(char **argv) { execv(argv[1], argv + 1); _exit(127); }
static const char *res(long r) { return r >= 0 ? "ok" : strerror(errno); }

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	long pid = syscall(SYS_clone, (unsigned long)(CLONE_UNTRACED | SIGCHLD), 0, 0, 0, 0);
	if (pid == 0) child(argv);
	printf("clone=%s", res(pid));
	if (pid < 0) {
		uint64_t args[8] = {CLONE_UNTRACED, 0, 0, 0, SIGCHLD, 0, 0, 0};
		pid = syscall(435, args, sizeof args);
		if (pid == 0) child(argv);
		printf(" clone3=%s", res(pid));
	}
	if (pid < 0) {
		pid = fork();
		if (pid == 0) child(argv);
	}
	printf("\n");
	fflush(stdout);
	waitpid(pid, 0, __WALL);
	return 0;
}
`

// BuildUntracedC compiles the C version of UntracedPython (static, with
// the host's gcc) to dir/name and returns its path. It skips the test when
// the host has no gcc or static libc, or fails it under
// AGENTBOX_REQUIRE_DOCKER=1.
func BuildUntracedC(t testing.TB, dir, name string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		skipOrFail(t, "no gcc on the host to build the untraced-clone program: apt-get install gcc libc6-dev")
	}
	src := filepath.Join(t.TempDir(), "untraced.c")
	if err := os.WriteFile(src, []byte(untracedC), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if b, err := exec.Command(gcc, "-static", "-O1", "-o", out, src).CombinedOutput(); err != nil {
		skipOrFail(t, "building the untraced-clone program: "+err.Error()+": "+strings.TrimSpace(string(b)))
	}
	return out
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("AGENTBOX_REQUIRE_DOCKER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
