package policy

import (
	"path"
	"strings"
)

// Toolchains run programs of their own: the go command runs compile, vet
// and link from its GOROOT/pkg/tool and the test binary it built; gcc runs
// cc1, as and ld; pip's vendored distro runs `uname -rs` (also when venv's
// ensurepip runs pip). Those are part of the command the agent ran, not
// commands of their own.

// DecideToolchainProgram judges, at exec time, a program a toolchain runs
// as part of a command whose driver was judged and allowed at its own exec
// stop (the executor knows it from the image's manifest: a member file of
// the driver's toolchain, or a file the driver built). It runs as part of
// that command: allowed, unless a deny rule names it (under any of its
// names: a toolchain cannot launder a denied program), or, for a file not
// in the image, commands.unknown_binaries says otherwise.
func (p *Policy) DecideToolchainProgram(toolchain, exe string, argv, names []string, unknown bool) Decision {
	// commands.default does not name it: a strict policy's `default:
	// deny` is about the commands the agent runs, which the driver was.
	if d := p.DecideProgram(exe, argv, names, false); d.Verdict == Deny && d.Rule != "commands.default" {
		return d
	}
	if unknown && p.cmd.unknown > Allow {
		return combine([]Part{p.unknownPart(argv)})
	}
	return Decision{Verdict: Allow, Rule: "toolchain " + toolchain,
		Reason: "run by the " + toolchain + " toolchain as part of the command the agent ran"}
}

// helpers are the programs a program is known to run of itself, by the
// basename it is called as: predicted with it, so they raise no
// unexpected_exec alarm. They are still judged by their own names when
// they run.
var helpers = map[string][]string{
	// cgo builds run the C compiler; go build stamps version control
	// information by asking git.
	"go": {"gcc", "cc", "git"},
	// pip's vendored distro runs `uname -rs` (and lsb_release where it
	// exists) for its user agent; python3 -m venv runs ensurepip, which
	// runs pip to install itself into the new venv.
	"pip":       {"uname", "lsb_release"},
	"venv":      {"uname", "lsb_release"},
	"ensurepip": {"uname", "lsb_release"},
}

// helpersOf are the helpers of one simple command: by its program's name
// without a version (pip3.11 is pip), or for `python3 -m MODULE` by the
// module's.
func helpersOf(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	name := strings.TrimRight(path.Base(argv[0]), "0123456789.-")
	if name == "python" && len(argv) > 2 {
		for i := 1; i < len(argv)-1; i++ {
			if argv[i] == "-m" {
				name = argv[i+1]
				break
			}
			if !strings.HasPrefix(argv[i], "-") {
				break
			}
		}
	}
	return helpers[name]
}
