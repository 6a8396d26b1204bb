package executor

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// With the set-id filter asked for in the hello, no command can set a
// set-id bit, root included, by chmod or by creating a file; other modes
// still change.
func TestSetIDFilter(t *testing.T) {
	s := testServer(t)
	s.setidFilter = true
	cmd := `echo x > f; chmod u+s f 2>/dev/null; echo "setuid=$?"; chmod g+s f 2>/dev/null; echo "setgid=$?"; chmod 750 f; echo "plain=$?"; ` +
		`python3 -c 'import os; os.close(os.open("g", os.O_CREAT|os.O_WRONLY, 0o4755))' 2>/dev/null; echo "create=$?"; ` +
		`stat -c %a f; ls g 2>/dev/null | wc -l`
	resp := s.handle(&wire.Request{Op: wire.OpExec, Command: cmd, TimeoutMS: 20_000})
	got := strings.Fields(string(resp.Output))
	want := []string{"setuid=1", "setgid=1", "plain=0", "create=1", "750", "0"}
	if resp.Error != "" || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q (%s), want %q", got, resp.Error, want)
	}
	// Without it (Docker: the engine's profile does it), root may.
	s2 := testServer(t)
	resp = s2.handle(&wire.Request{Op: wire.OpExec, Command: `echo x > f; chmod u+s f; echo "setuid=$?"`, TimeoutMS: 20_000})
	if strings.TrimSpace(string(resp.Output)) != "setuid=0" {
		t.Skipf("this host refuses set-uid bits by itself: %q", resp.Output)
	}
}
