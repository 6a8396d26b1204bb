package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// Issue 24 through the real binary: a denied program is stopped however
// it is disguised (a link or copy of python3 under an allowed name, a
// child made with CLONE_UNTRACED from C), each with its exec_denied
// record; a program the up-front analysis did not predict is an
// unexpected_exec alarm with its argv and parents; `audit show` and
// `audit stats` show them.
func TestExecIdentityEndToEnd(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	sandboxtest.BuildUntracedC(t, ws, "spawner")
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\n  allow: [cat, head, ln, cp]\n  deny: [python3, touch]\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	attacks := []struct{ marker, cmd string }{
		{"m-link", `ln -s /usr/bin/python3 ./cat && ./cat -c 'open("/workspace/m-link","w")'`},
		{"m-copy", `cp /usr/bin/python3 ./head && ./head -c 'open("/workspace/m-copy","w")'`},
		{"m-untraced", `./spawner /usr/bin/touch /workspace/m-untraced`},
	}
	for _, a := range attacks {
		agentbox(t, nil, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--", a.cmd)
		if _, err := os.Stat(filepath.Join(ws, a.marker)); err == nil {
			t.Errorf("%q: the denied program ran (marker on the host)", a.cmd)
		}
	}
	agentbox(t, nil, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--", `printf 'ls >/dev/null\n' > gen.sh; bash gen.sh`)
	var denied []string
	var unexpected []string
	for _, l := range readAuditLog(t, log) {
		switch {
		case l.rec.Event == "exec_denied":
			denied = append(denied, filepath.Base(l.rec.Exe)+" "+strings.Join(l.rec.Argv, " "))
		case l.rec.Event == "alarm" && l.rec.What == "unexpected_exec" && len(l.rec.Argv) > 0:
			unexpected = append(unexpected, filepath.Base(l.rec.Argv[0])+" < "+strings.Join(l.rec.Parents, " < "))
		}
	}
	if len(denied) != 3 || !strings.HasPrefix(denied[0], "python3") || !strings.HasPrefix(denied[1], "head ./head") || !strings.HasPrefix(denied[2], "touch /usr/bin/touch") {
		t.Errorf("exec_denied records: %q", denied)
	}
	if !slices.ContainsFunc(unexpected, func(s string) bool { return strings.HasPrefix(s, "ls < bash (") }) {
		t.Errorf("no unexpected_exec alarm for the ls of a generated script: %q", unexpected)
	}
	show := agentbox(t, nil, "audit", "show", log)
	if !strings.Contains(show.stdout, "unexpected_exec") || !strings.Contains(show.stdout, "exec_denied") {
		t.Errorf("audit show: %s", show.stdout)
	}
	if stats := agentbox(t, nil, "audit", "stats", log); !strings.Contains(stats.stdout, "exec_denied") {
		t.Errorf("audit stats does not list exec_denied: %s", stats.stdout)
	}
}
