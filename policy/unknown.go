package policy

import (
	"path"
	"strings"
)

// Programs that are not part of the sandbox's image (built, downloaded or
// copied in the session) are judged by commands.unknown_binaries as well
// as by their name. At exec time the executor knows them by content (the
// image's manifest of executables); up front, the analysis marks a command
// run by its path in a place the session can write (./x, sub/x,
// /workspace/..., /tmp/...), since such a file cannot be the image's.

// writablePrefixes are the absolute places a session can write files to.
var writablePrefixes = []string{"/workspace/", "/tmp/", "/var/tmp/", "/dev/shm/", "/run/"}

// sessionPath reports whether a command word runs a file by a path the
// session could have written.
func sessionPath(name string) bool {
	if !strings.Contains(name, "/") {
		return false
	}
	if !path.IsAbs(name) {
		return true
	}
	clean := path.Clean(name)
	for _, p := range writablePrefixes {
		if strings.HasPrefix(clean+"/", p) {
			return true
		}
	}
	return false
}

// UnknownBinaries is the verdict for programs that are not part of the
// image (commands.unknown_binaries).
func (p *Policy) UnknownBinaries() Verdict { return p.cmd.unknown }

const unknownNote = "not one of the image's executables (built, downloaded or copied in the session)"

// unknownPart is the commands.unknown_binaries part for argv.
func (p *Policy) unknownPart(argv []string) Part {
	return Part{Argv: argv, Verdict: p.cmd.unknown, Rule: "commands.unknown_binaries", Note: unknownNote}
}

// DecideProgram judges an execve as the executor sees it: DecideExec of
// exe and argv, the same argv under each of names (the names the executed
// file's content has in the image: a copy of python3 called ./cat is
// python3), and commands.unknown_binaries when unknown (the file is not
// one of the image's executables). The most restrictive decision wins.
func (p *Policy) DecideProgram(exe string, argv []string, names []string, unknown bool) Decision {
	d := p.DecideExec(exe, argv)
	for _, n := range names {
		if n == "" || len(argv) > 0 && n == path.Base(argv[0]) {
			continue
		}
		alt := append([]string{n}, argv[min(1, len(argv)):]...)
		if e := p.DecideArgv(alt); e.Verdict > d.Verdict {
			d = e
		}
	}
	if unknown && p.cmd.unknown > d.Verdict {
		d = combine([]Part{p.unknownPart(argv)})
	}
	return d
}

// Programs are the program names a decided script should run: the
// basename of the command word of every part. The executor reports a
// program that runs and is not among them as an unexpected_exec alarm.
func (d Decision) Programs() []string {
	seen := map[string]bool{}
	out := []string{}
	for _, p := range d.Parts {
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			continue
		}
		n := path.Base(p.Argv[0])
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
