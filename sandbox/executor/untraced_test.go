package executor

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// Under the executor's filter no child can be made that the tracer would
// not follow: clone with CLONE_UNTRACED is refused (EPERM) and clone3
// answers ENOSYS, from python and from C; the program falls back to fork,
// whose child the tracer sees. Without the filter (the control) the
// untraced clone succeeds.
func TestFilterRefusesUntracedClone(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cbin := sandboxtest.BuildUntracedC(t, t.TempDir(), "untraced")
	run := func(mode, cmd string) string {
		c := exec.Command(os.Args[0], cmd)
		c.Env = append(os.Environ(), "EXECUTOR_TEST_HELPER="+mode, "PY="+sandboxtest.UntracedPython, "CBIN="+cbin)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v %s", mode, cmd, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	want := "clone=Operation not permitted clone3=Function not implemented"
	for _, cmd := range []string{`python3 -c "$PY" /bin/true`, `"$CBIN" /bin/true`} {
		got := strings.ReplaceAll(run("setid-filter", cmd), "_", " ")
		if got != want {
			t.Errorf("with the filter, %s: %q, want %q", cmd, got, want)
		}
		if got := run("bash", cmd); got != "clone=ok" {
			t.Errorf("the control (no filter), %s: %q", cmd, got)
		}
	}
}
