package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// identityPolicy denies python3 and allows cat and head by name; programs
// that are not in the image are denied when strict.
func identityPolicy(unknown string) string {
	return "version: 1\nextends: none\ncommands:\n  default: allow\n  unknown_binaries: " + unknown + "\n  allow: [cat, head, ln, cp]\n  deny: [python3]\n"
}

func startIdentity(t *testing.T, rt, user, unknown string) (sandbox.Session, string) {
	t.Helper()
	ws := t.TempDir()
	if user != "0:0" {
		if err := os.Chown(ws, 4321, 4321); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testutil.Config(t, ws)
	cfg.Runtime, cfg.User, cfg.Pids = rt, user, 128
	cfg.Enforce = sandbox.Enforcement{Policy: []byte(identityPolicy(unknown)), PolicyName: "identity.yaml",
		ManifestDir: filepath.Join(t.TempDir(), "manifests")}
	return testutil.StartWith(t, cfg), ws
}

// A program is known by what it is: a link or a copy of python3 under an
// allowed name (cat, head) is judged as python3 and never runs (no marker
// on the host), as root and as another user, on runc and gVisor; the
// denial names the content.
func TestProgramKnownByContent(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		for _, user := range []string{"0:0", "4321:4321"} {
			t.Run(strings.ReplaceAll(user, ":", "_"), func(t *testing.T) {
				s, ws := startIdentity(t, rt, user, "allow")
				for _, c := range []struct{ name, cmd string }{
					{"link", `ln -s /usr/bin/python3 ./cat && ./cat -c 'open("/workspace/marker-link","w")'`},
					{"copy", `cp /usr/bin/python3 ./head && ./head -c 'open("/workspace/marker-copy","w")'`},
					{"hardname", `cp /usr/bin/python3 /tmp/cat && /tmp/cat -c 'open("/workspace/marker-hardname","w")'`},
				} {
					res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: c.cmd, Timeout: 30 * time.Second})
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					if _, err := os.Stat(filepath.Join(ws, "marker-"+c.name)); err == nil {
						t.Errorf("%s: python3 ran under another name (marker on the host); output %q", c.name, res.Output)
					}
					if len(res.DeniedExecs) != 1 || res.DeniedExecs[0].Decision != "deny" || !strings.Contains(res.DeniedExecs[0].Reason, "python3") {
						t.Errorf("%s: denied execs %+v, want the python3 copy", c.name, res.DeniedExecs)
					}
				}
				// The real cat still runs, and an allowed program is not an alarm.
				res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "cat /etc/hostname >/dev/null && echo ok", Timeout: 30 * time.Second, Expect: []string{"cat", "echo"}})
				if err != nil || strings.TrimSpace(string(res.Output)) != "ok" || len(res.DeniedExecs) != 0 || len(res.Alarms) != 0 {
					t.Fatalf("plain cat: %v %q denied %+v alarms %+v", err, res.Output, res.DeniedExecs, res.Alarms)
				}
			})
		}
	})
}

// A program that is not one of the image's executables is judged by
// commands.unknown_binaries: allowed and recorded (an unknown_binary
// alarm), or denied before it runs; a program the up-front analysis did
// not predict raises an unexpected_exec alarm with its argv and parents.
func TestUnknownAndUnexpectedPrograms(t *testing.T) {
	runtimes(t, func(t *testing.T, rt string) {
		for _, unknown := range []string{"allow", "deny"} {
			t.Run(unknown, func(t *testing.T) {
				s, ws := startIdentity(t, rt, "4321:4321", unknown)
				bin := sandboxtest.BuildUntracedC(t, ws, "tool")
				if err := os.Chown(bin, 4321, 4321); err != nil {
					t.Fatal(err)
				}
				res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "./tool /usr/bin/touch /workspace/marker",
					Timeout: 30 * time.Second, Expect: []string{"tool"}})
				if err != nil {
					t.Fatal(err)
				}
				_, ranErr := os.Stat(filepath.Join(ws, "marker"))
				switch unknown {
				case "deny":
					if ranErr == nil || len(res.DeniedExecs) != 1 || res.DeniedExecs[0].Rule != "commands.unknown_binaries" {
						t.Fatalf("an unknown binary ran under unknown_binaries: deny: denied %+v output %q", res.DeniedExecs, res.Output)
					}
				case "allow":
					if ranErr != nil {
						t.Fatalf("the unknown binary did not run: %q %+v", res.Output, res.DeniedExecs)
					}
					kinds := map[string]sandbox.Alarm{}
					for _, a := range res.Alarms {
						kinds[a.What+" "+filepath.Base(a.Argv[0])] = a
					}
					if _, ok := kinds["unknown_binary tool"]; !ok {
						t.Errorf("no unknown_binary alarm for ./tool: %+v", res.Alarms)
					}
					// touch was not predicted (only tool was): its alarm names
					// argv and the parent chain.
					a, ok := kinds["unexpected_exec touch"]
					if !ok || !slices.Contains(a.Argv, "/workspace/marker") || len(a.Parents) == 0 || !strings.HasPrefix(a.Parents[0], "tool (") {
						t.Errorf("no unexpected_exec alarm for touch with its parents: %+v", res.Alarms)
					}
				}
			})
		}
	})
}
