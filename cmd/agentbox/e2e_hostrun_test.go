package main_test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/workspace"
)

// hostRunPlants are, for each family of the host-run catalogue, the paths
// an agent plants: the family's first name at the top, and a case variant
// of it below a directory (a case-insensitive host opens both).
func hostRunPlants() map[string][]string {
	out := map[string][]string{}
	for _, f := range workspace.HostRun.Families {
		for _, e := range workspace.HostRun.Entries {
			if e.Family != f {
				continue
			}
			name := strings.NewReplacer("*", "x", "?", "x").Replace(e.Expanded()[0])
			out[f] = []string{name, "deep/" + strings.ToUpper(name)}
			break
		}
	}
	out["environment loaders"] = append(out["environment loaders"], "sub/.Envrc")
	return out
}

// TestHostRunFamiliesHeld: under the built-in default policy, in rw mode,
// an agent plants one file of every host-run family (and its case
// variant deeper down); each is held (an alarm names it, changes --held
// lists it) and absent from the workspace, while an ordinary file next to
// them is promoted.
func TestHostRunFamiliesHeld(t *testing.T) {
	testutil.RequireDocker(t)
	ws := filepath.Join(t.TempDir(), "ws")
	writeFile(t, filepath.Join(ws, "README"), "hello\n", 0o644)
	plants := hostRunPlants()
	// The names go in hex, as an agent would hide them: the policy's
	// argument checks (files.read.deny names .npmrc) are not what this
	// tests; staging is.
	var all []string
	for _, ps := range plants {
		all = append(all, ps...)
	}
	py := `import os, binascii
for p in binascii.unhexlify("` + hex.EncodeToString([]byte(strings.Join(all, "\n"))) + `").decode().split("\n"):
    d = os.path.dirname(p)
    if d: os.makedirs(d, exist_ok=True)
    open(p, "w").write("touch /tmp/pwned\n")
open("ordinary.txt", "w").write("ok\n")
`
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote("python3 -c '"+pyEsc(py)+"'")+"}}\n  - content: done\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", script, "plant host-run files")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "ordinary.txt")); err != nil || string(b) != "ok\n" {
		t.Fatalf("the ordinary file was not promoted (%v): the planting call did not run?\n%s", err, r.stderr)
	}
	alarms := map[string]string{}
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == audit.EventAlarm && l.rec.Action == "held" {
			alarms[l.rec.Path] = l.rec.Rule
		}
	}
	held := ab.run(t, "changes", sessionOf(t, r.stderr), "--held")
	for fam, ps := range plants {
		t.Run(fam, func(t *testing.T) {
			for _, p := range ps {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s reached the workspace", p)
				}
				if !heldUnder(alarms, p) {
					t.Errorf("no held alarm for %s (alarms: %v)", p, alarms)
				}
				if !strings.Contains(held.stdout, p) {
					t.Errorf("changes --held does not list %s:\n%s", p, held.stdout)
				}
			}
		})
	}
}

// heldUnder reports an alarm for p or a directory above it (a held
// directory holds what is below).
func heldUnder(alarms map[string]string, p string) bool {
	for q := p; q != "." && q != "/"; q = filepath.Dir(q) {
		if alarms[q] != "" {
			return true
		}
	}
	return false
}
