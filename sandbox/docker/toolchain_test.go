package docker_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// toolchainPrograms are, per toolchain image, its main program (python3
// for python: pip is a script it runs) and arguments that run it, for the
// exec-identity check.
var toolchainPrograms = map[string]struct{ name, run string }{
	"python": {"python3", "-m pip --version"},
	"node":   {"node", "-e 'console.log(1)'"},
	"go":     {"go", "version"},
	"full":   {"rg", "--version"},
}

// TestToolchainImages runs the hardening suite and the whole conformance
// suite (commands, timeouts that kill the process tree, limits, files,
// symlinks, streaming) on every toolchain image under runc, as on the
// base: an image's extra programs change nothing of the sandbox. Each
// image's manifest of executables is made on first use, and a copy of the
// toolchain's own program under an allowed name is judged as that program.
func TestToolchainImages(t *testing.T) {
	for _, name := range testutil.ToolchainImages {
		t.Run(name, func(t *testing.T) {
			ref := testutil.RequireImage(t, name)
			start := func(t *testing.T) (sandbox.Session, string) {
				ws := t.TempDir()
				cfg := testutil.Config(t, ws)
				cfg.Image, cfg.MemoryBytes, cfg.Pids = ref, 256<<20, 128
				return testutil.StartWith(t, cfg), ws
			}
			t.Run("Hardening", func(t *testing.T) { sandboxtest.RunHardening(t, start, nil) })
			t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, start) })
			t.Run("Identity", func(t *testing.T) { toolchainIdentity(t, ref, name) })
		})
	}
}

// toolchainIdentity denies the image's program by name, copies the file
// it runs as to ./cat (allowed by name) and runs the copy: the executor
// knows it by its content from the image's manifest and kills it before
// it runs. The manifest is cached under the image's id and lists the
// program's path.
func toolchainIdentity(t *testing.T, ref, image string) {
	prog := toolchainPrograms[image]
	ws := t.TempDir()
	manifests := filepath.Join(t.TempDir(), "manifests")
	cfg := testutil.Config(t, ws)
	cfg.Image, cfg.Pids = ref, 128
	cfg.Enforce = sandbox.Enforcement{Policy: []byte("version: 1\nextends: none\ncommands:\n  default: allow\n  unknown_binaries: allow\n  allow: [cat, cp, readlink]\n  deny: [" + prog.name + "]\n"),
		PolicyName: "identity.yaml", ManifestDir: manifests}
	s := testutil.StartWith(t, cfg)
	ctx := context.Background()
	// The file the program's name resolves to (through its links).
	res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "readlink -f \"$(command -v " + prog.name + ")\"", Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("locating %s: %v %q", prog.name, err, res.Output)
	}
	real := strings.TrimSpace(string(res.Output))
	res, err = s.Exec(ctx, sandbox.ExecRequest{Command: "cp " + real + " ./cat && ./cat " + prog.run, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeniedExecs) == 0 || res.DeniedExecs[0].Decision != "deny" {
		t.Fatalf("a copy of %s (%s) ran as ./cat: output %q, denied %+v", prog.name, real, res.Output, res.DeniedExecs)
	}
	if !strings.Contains(res.DeniedExecs[0].Reason, prog.name) {
		t.Errorf("the denial does not name %s: %+v", prog.name, res.DeniedExecs[0])
	}
	m, err := sandbox.LoadManifest(manifests, s.Info().ImageID)
	if err != nil || m == nil {
		t.Fatalf("no manifest of %s cached under %s: %v", ref, s.Info().ImageID, err)
	}
	var paths []string
	for _, p := range m.Programs {
		paths = append(paths, p.Paths...)
	}
	if !slices.Contains(paths, real) {
		t.Errorf("the manifest of %s (%d programs) does not list %s", ref, len(m.Programs), real)
	}
	t.Logf("%s: manifest of %d executables; ./cat (a copy of %s) denied: %s", ref, len(m.Programs), real, res.DeniedExecs[0].Reason)
}
