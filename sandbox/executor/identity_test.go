package executor

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// A program is judged by its content: a copy or a link of touch (denied)
// under another name is stopped at its exec and never runs; a file that is
// not in the manifest runs and is reported as unknown, and a program the
// prediction did not name is reported as unexpected.
func TestTraceKnowsProgramsByContent(t *testing.T) {
	s := testServer(t)
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip(err)
	}
	// An "image" holding touch (a copy: the manifest knows it by content).
	image := t.TempDir()
	b, err := os.ReadFile(touch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(image, "touch"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("touch", filepath.Join(image, "maketime")); err != nil {
		t.Fatal(err)
	}
	m, err := buildManifest(image)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Programs) != 1 || len(m.Programs[0].Paths) != 2 {
		t.Fatalf("manifest of the image: %+v", m.Programs)
	}
	s.ids = newIdentities(m, "")
	for _, cmd := range []string{
		"cp " + touch + " ./lister && ./lister m1",
		"ln -s " + touch + " ./viewer && ./viewer m2",
		"cp " + touch + " ./t3 && exec -a ls ./t3 m3",
	} {
		resp := run(t, s, cmd)
		for _, m := range []string{"m1", "m2", "m3"} {
			if exists(s, m) {
				t.Fatalf("%q: touch ran under another name (%s exists); stopped %+v", cmd, m, resp.Execs)
			}
		}
		if len(resp.Execs) != 1 || resp.Execs[0].Rule != "commands.deny[0]" {
			t.Fatalf("%q: stopped %+v", cmd, resp.Execs)
		}
	}
	// A file the manifest does not know: it runs (the judge allows it)
	// and is reported, with what ran that was not predicted.
	if err := os.WriteFile(filepath.Join(s.testRoot, "gen.sh"), []byte("#!/bin/sh\nexec true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	resp := s.exec(wireExec{cmd: "cp /bin/sh ./mysh; ./gen.sh", expect: []string{"cp", "gen.sh"}}.req())
	var whats []string
	for _, a := range resp.Alarms {
		if len(a.Argv) > 0 {
			whats = append(whats, a.What+":"+filepath.Base(a.Argv[0]))
		}
	}
	if !slices.Contains(whats, "unexpected_exec:true") {
		t.Errorf("the true a generated script ran is not reported: %v", whats)
	}
}

// wireExec builds an exec request with a prediction.
type wireExec struct {
	cmd    string
	expect []string
}

func (w wireExec) req() *wire.Request {
	return &wire.Request{Command: w.cmd, TimeoutMS: 20_000, Expect: w.expect}
}

// A script the prediction named runs through its #! interpreter without
// an unexpected_exec report (directly, and through /usr/bin/env), while
// what the script itself runs is still reported; a FIFO in a script's
// place is never read (the tracer does not block).
func TestTraceScriptInterpreterIsPredicted(t *testing.T) {
	s := testServer(t)
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip(err)
	}
	for name, body := range map[string]string{
		"direct.sh": "#!/bin/sh\nexec true\n",
		"viaenv.sh": "#!" + env + " sh\nexec true\n",
	} {
		if err := os.WriteFile(filepath.Join(s.testRoot, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		resp := s.exec(wireExec{cmd: "./" + name, expect: []string{name}}.req())
		var whats []string
		for _, a := range resp.Alarms {
			if len(a.Argv) > 0 {
				whats = append(whats, a.What+":"+filepath.Base(a.Argv[0]))
			}
		}
		if !slices.Equal(whats, []string{"unexpected_exec:true"}) {
			t.Errorf("%s: alarms %v; want only the true the script ran", name, whats)
		}
	}
	resp := s.exec(wireExec{cmd: "mkfifo f.sh && /bin/sh f.sh </dev/null & sleep 0.2; kill %1 2>/dev/null; true", expect: []string{"mkfifo", "sleep", "kill", "true", "f.sh"}}.req())
	if resp.ExitCode != 0 {
		t.Errorf("fifo: exit %d %+v", resp.ExitCode, resp)
	}
}
