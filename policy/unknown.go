package policy

import (
	"path"
	"slices"
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

// DecideProgram judges an execve as the executor sees it.
//
// names are the names the executed file's content has in the image (its
// file and the links to it: python3.11 and python3). When it has some, the
// program is judged as what it is: under those names, the most restrictive
// decision of a name some rule names (python3 here; python3.11 would only
// fall to commands.default), else the default's; the name it was called
// by (argv[0], or exe) counts too, but only where a rule names it (a copy
// of python3 called ./cat is python3 whatever cat's rules say; `exec -a
// rm` is still rm).
//
// Without names it is DecideExec of exe and argv, and when unknown (the
// file is not one of the image's executables) commands.unknown_binaries
// applies too. The most restrictive decision wins.
func (p *Policy) DecideProgram(exe string, argv []string, names []string, unknown bool) Decision {
	if len(names) == 0 || len(argv) == 0 {
		d := p.DecideExec(exe, argv)
		if unknown && p.cmd.unknown > d.Verdict {
			d = combine([]Part{p.unknownPart(argv)})
		}
		return d
	}
	rest := argv[1:]
	named := func(d Decision) bool { return d.Rule != "commands.default" }
	var d Decision
	found, explicit := false, false
	for _, n := range names {
		e := p.DecideArgv(append([]string{n}, rest...))
		switch {
		case named(e) && (!explicit || e.Verdict > d.Verdict):
			d, found, explicit = e, true, true
		case !found:
			d, found = e, true
		}
	}
	for _, other := range []string{argv[0], exe} {
		if other == "" || slices.Contains(names, path.Base(other)) {
			continue
		}
		if e := p.DecideArgv(append([]string{other}, rest...)); named(e) && e.Verdict > d.Verdict {
			d = e
		}
	}
	return d
}

// Programs are the program names a decided script should run: the
// basename of the command word of every part, and the helpers such a
// program is known to run of itself (pip's uname; see toolchain.go). The
// executor reports a program that runs and is not among them as an
// unexpected_exec alarm.
func (d Decision) Programs() []string {
	seen := map[string]bool{}
	out := []string{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, p := range d.Parts {
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			continue
		}
		add(path.Base(p.Argv[0]))
		for _, h := range helpersOf(p.Argv) {
			add(h)
		}
	}
	return out
}
