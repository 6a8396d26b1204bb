package executor

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Under the set-id filter no process can set a set-id bit, root included,
// by chmod or by creating a file; other modes still change. Without it
// (the control) root may.
func TestSetIDFilter(t *testing.T) {
	cmd := `cd "$DIR" && echo x > f; chmod u+s f 2>/dev/null; echo "setuid=$?"; chmod g+s f 2>/dev/null; echo "setgid=$?"; chmod 750 f; echo "plain=$?"; ` +
		`python3 -c 'import os; os.close(os.open("g", os.O_CREAT|os.O_WRONLY, 0o4755))' 2>/dev/null; echo "create=$?"; ` +
		`stat -c %a f; ls g 2>/dev/null | wc -l`
	run := func(mode string) string {
		c := exec.Command(os.Args[0], cmd)
		c.Env = append(os.Environ(), "EXECUTOR_TEST_HELPER="+mode, "DIR="+t.TempDir())
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v %s", mode, err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	if got, want := run("setid-filter"), "setuid=1 setgid=1 plain=0 create=1 750 0"; got != want {
		t.Fatalf("with the filter: %q, want %q", got, want)
	}
	if os.Geteuid() == 0 {
		if got := run("bash"); !strings.HasPrefix(got, "setuid=0") {
			t.Errorf("the control (no filter) as root: %q", got)
		}
	}
}
