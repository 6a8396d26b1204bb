package executor

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// The manifest groups a toolchain's files by their paths: Debian's go
// (a GOROOT with bin/go and pkg/tool) and gcc (drivers by name, GCC's own
// programs, the assembler and linker); nothing else is grouped.
func TestGroupToolchains(t *testing.T) {
	m := &sandbox.Manifest{Programs: []sandbox.ManifestProgram{
		{Paths: []string{"/usr/lib/go-1.19/bin/go", "/usr/bin/go"}},
		{Paths: []string{"/usr/lib/go-1.19/bin/gofmt"}},
		{Paths: []string{"/usr/lib/go-1.19/pkg/tool/linux_amd64/compile"}},
		{Paths: []string{"/usr/lib/go-1.19/pkg/tool/linux_amd64/vet"}},
		{Paths: []string{"/opt/other/pkg/tool/linux_amd64/compile"}}, // no bin/go beside it
		{Paths: []string{"/usr/bin/x86_64-linux-gnu-gcc-12", "/usr/bin/gcc", "/usr/bin/cc"}},
		{Paths: []string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1"}},
		{Paths: []string{"/usr/bin/x86_64-linux-gnu-as", "/usr/bin/as"}},
		{Paths: []string{"/usr/bin/x86_64-linux-gnu-ld.bfd", "/usr/bin/ld"}},
		{Paths: []string{"/usr/bin/python3.11", "/usr/bin/python3"}},
		{Paths: []string{"/usr/bin/sudo"}},
		{Paths: []string{"/usr/bin/c++filt"}},
	}}
	groupToolchains(m)
	want := []string{"go*", "go*", "go", "go", "", "gcc*", "gcc", "gcc", "gcc", "", "", ""}
	for i, e := range m.Programs {
		got := e.Toolchain
		if e.Driver {
			got += "*"
		}
		if got != want[i] {
			t.Errorf("%s: toolchain %q, want %q (* is the driver)", e.Paths[0], got, want[i])
		}
	}
}

// A renamed program is told from a versioned name of the same program.
func TestSameProgram(t *testing.T) {
	names := []string{"python3.11", "python3"}
	for n, want := range map[string]bool{"python3": true, "python": true, "python3.11": true, "lister": false, "py": false, "": false} {
		if got := sameProgram(n, names); got != want {
			t.Errorf("sameProgram(%q, %v) = %v", n, names, got)
		}
	}
}

// toolchainJudge is a default-policy-like judge: bash, sh, go, cp and cat
// are allowed by name, and lister (as if the user approved ./lister), sudo is denied, anything else asks (and nobody
// answers, so it is stopped).
var toolchainJudge = JudgeFunc(func(argv []string) Decision {
	switch path.Base(argv[0]) {
	case "bash", "sh", "go", "cp", "cat", "lister":
		return Decision{Verdict: Allow, Rule: "commands.allow"}
	case "sudo":
		return Decision{Verdict: Deny, Rule: "commands.deny[0]", Reason: "sudo is denied"}
	}
	return Decision{Verdict: Ask, Rule: "commands.default"}
})

// What a toolchain's driver runs of its own files is part of the command
// that ran the driver: the image's go (a copy of bash here) runs its
// pkg/tool's compile (a copy of touch), and the test binary it built in
// its go-build directory, with no ask, no unexpected_exec and no
// unknown_binary; the same files run by anything else are judged by their
// own names (asked, so stopped), and the driver cannot launder a denied
// program. A copy of an image program under another name is an
// unexpected_exec alarm even when predicted.
func TestToolchainRunsItsOwnFiles(t *testing.T) {
	s := testServer(t)
	s.judge = toolchainJudge
	bin := map[string]string{}
	for _, n := range []string{"bash", "touch", "mkdir", "true", "cat"} {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skip(err)
		}
		bin[n] = p
	}
	image := t.TempDir()
	goroot := filepath.Join(image, "usr", "lib", "go")
	put := func(dst, src string) string {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	goBin := put(filepath.Join(goroot, "bin", "go"), bin["bash"])
	compile := put(filepath.Join(goroot, "pkg", "tool", "linux_amd64", "compile"), bin["touch"])
	sudo := put(filepath.Join(image, "usr", "bin", "sudo"), bin["mkdir"])
	cat := put(filepath.Join(image, "usr", "bin", "cat"), bin["cat"])
	m, err := buildManifest(image)
	if err != nil {
		t.Fatal(err)
	}
	s.ids = newIdentities(m, "")
	testBin := filepath.Join(s.testRoot, "go-build123", "b001", "m.test")
	put(testBin, bin["true"])

	type result struct {
		made    bool
		stopped []string
		alarms  []string
		progs   []wire.Program
	}
	do := func(cmd, made string, expect ...string) result {
		t.Helper()
		resp := s.exec(wireExec{cmd: cmd, expect: expect}.req())
		if resp.Error != "" {
			t.Fatalf("%q: %s", cmd, resp.Error)
		}
		var r result
		r.made = made != "" && exists(s, made)
		for _, e := range resp.Execs {
			r.stopped = append(r.stopped, filepath.Base(e.Argv[0])+":"+e.Rule)
		}
		for _, a := range resp.Alarms {
			if len(a.Argv) > 0 {
				r.alarms = append(r.alarms, a.What+":"+a.Action+":"+filepath.Base(a.Argv[0]))
			}
		}
		r.progs = resp.Programs
		return r
	}

	r := do(goBin+" -c '"+compile+" made1'", "made1", "go")
	if !r.made || len(r.stopped) > 0 || len(r.alarms) > 0 {
		t.Errorf("go running its compile: made %v, stopped %v, alarms %v", r.made, r.stopped, r.alarms)
	}
	if !slices.Contains(r.progs, wire.Program{Name: "compile", Program: "compile", Toolchain: "go", Count: 1}) {
		t.Errorf("programs of go running its compile: %+v", r.progs)
	}
	r = do(goBin+" -c '"+testBin+"'", "", "go")
	if len(r.stopped) > 0 || len(r.alarms) > 0 || !slices.Contains(r.progs, wire.Program{Name: "m.test", Toolchain: "go", Unknown: true, Count: 1}) {
		t.Errorf("go running the test binary it built: stopped %v, alarms %v, programs %+v", r.stopped, r.alarms, r.progs)
	}

	// The same files, not run by the driver: judged on their own.
	for _, c := range []struct{ cmd, made string }{
		{compile + " made2", "made2"},
		{goBin + " -c 'sh -c \"" + compile + " made3\"'", "made3"},
		{testBin, ""},
	} {
		r = do(c.cmd, c.made, "go", "bash", "compile", "m.test")
		if r.made || len(r.stopped) != 1 || !strings.HasSuffix(r.stopped[0], ":commands.default") {
			t.Errorf("%q: made %v, stopped %v; want it asked (so stopped)", c.cmd, r.made, r.stopped)
		}
	}

	// A denied program under the driver stays denied, and is an alarm.
	r = do(goBin+" -c '"+sudo+" made4'", "made4", "go")
	if r.made || !slices.Equal(r.stopped, []string{"sudo:commands.deny[0]"}) || !slices.Contains(r.alarms, "unexpected_exec:denied:sudo") {
		t.Errorf("go running sudo: made %v, stopped %v, alarms %v", r.made, r.stopped, r.alarms)
	}

	// A copy of the image's cat run as ./lister, predicted: it runs (cat
	// is allowed) and is an alarm, recorded as cat.
	r = do("cp "+cat+" ./lister && ./lister /dev/null", "", "cp", "lister")
	if len(r.stopped) > 0 || !slices.Contains(r.alarms, "unexpected_exec:reported:lister") ||
		!slices.Contains(r.progs, wire.Program{Name: "lister", Program: "cat", Count: 1}) {
		t.Errorf("renamed copy: stopped %v, alarms %v, programs %+v", r.stopped, r.alarms, r.progs)
	}
}
