package executor

import (
	"bytes"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// maxNoted bounds the program alarms of one call; the rest are counted.
const maxNoted = 32

// maxParents bounds the parent chain of one alarm.
const maxParents = 8

// ran is one program at its exec stop, as observe and the programs list
// see it.
type ran struct {
	pid       int
	argv      []string
	exe       string
	prog      string // the name it ran under: argv[0], or exe when argv[0] names another file
	id        identity
	toolchain string // it runs as part of this toolchain's command (see toolchainctx_linux.go)
	unknown   bool   // not one of the image's executables
}

// allowed notes a program that runs: listed in the call's programs (under
// its name and, when the manifest knows it, what it is), its toolchain
// image remembered, and observed.
func (c *traceCall) allowed(x ran) {
	c.progs.add(x.prog, identified(x), x.toolchain, x.unknown)
	c.ran(x.pid, x.id)
	c.observe(x, "")
}

// observeDenied notes a program that was stopped at its exec stop and
// that the up-front analysis did not predict (or that is another program
// than its name says): besides its exec_denied record, an unexpected_exec
// alarm, so that a denied program a toolchain or script tried to run is
// an alarm like one that ran.
func (c *traceCall) observeDenied(x ran) {
	c.observe(x, "denied")
}

// observe notes an "unexpected_exec" alarm when the up-front analysis did
// not predict the program (run through an interpreter, by a generated
// script) or when the image knows its content as another program than
// the name it ran under (a copy of python3 run as ./lister, predicted or
// not), and an "unknown_binary" alarm when its file is not one of the
// image's executables (it ran: the policy's commands.unknown_binaries let
// it, "allow and record"). What a toolchain runs of itself as part of a
// predicted command (go's compile, the test binary go test built) is
// neither. Each carries the argv and the parent chain. action is "" for
// a program that runs, else what was done to it ("denied").
func (c *traceCall) observe(x ran, action string) {
	argv, exe, id := x.argv, x.exe, x.id
	renamed := id.known && !sameProgram(path.Base(x.prog), id.names)
	unexpected := renamed || c.expect != nil && x.toolchain == "" && !c.expected(argv, exe, id) && !c.viaScript(x.pid, argv)
	unknown := c.ids != nil && !id.known && x.toolchain == "" && action == ""
	if !unexpected && !unknown {
		return
	}
	if len(c.noted) >= maxNoted {
		c.notedOver++
		return
	}
	parents := parentChain(x.pid, c.root)
	shown := argv
	if path.Base(argv[0]) != path.Base(exe) {
		shown = append([]string{exe}, argv[1:]...)
	}
	if unexpected {
		why := "the up-front analysis of the command did not predict this program"
		if renamed {
			why = "by content it is the image's " + id.names[0] + ", run under the name " + path.Base(x.prog)
		} else if len(id.names) > 0 && !slices.Contains(id.names, path.Base(argv[0])) {
			why += " (by content it is the image's " + id.names[0] + ")"
		}
		if action == "" {
			action = "reported"
		}
		c.noted = append(c.noted, wire.Alarm{Path: []byte(exe), What: "unexpected_exec", Action: action, Rule: why, Argv: shown, Parents: parents})
	}
	if unknown {
		c.noted = append(c.noted, wire.Alarm{Path: []byte(exe), What: "unknown_binary", Action: "allowed",
			Rule: "commands.unknown_binaries: not one of the image's executables", Argv: shown, Parents: parents})
	}
}

// identified is the image's program a file is by content: the name it ran
// under when that is one of its names, else its first; "" when the
// manifest does not know it.
func identified(x ran) string {
	if !x.id.known || len(x.id.names) == 0 {
		return ""
	}
	if n := path.Base(x.prog); slices.Contains(x.id.names, n) {
		return n
	}
	return x.id.names[0]
}

// sameProgram reports whether name is one of names, or the same program
// but for a version: python for python3.11, pip3 for pip, gcc for gcc-12
// (a venv's bin/python is a copy of the image's python3.11).
func sameProgram(name string, names []string) bool {
	if len(names) == 0 || slices.Contains(names, name) {
		return true
	}
	stem := versionless(name)
	for _, n := range names {
		if versionless(n) == stem && stem != "" {
			return true
		}
	}
	return false
}

// versionless is a program name without its trailing version (digits,
// dots and dashes).
func versionless(name string) string {
	return strings.TrimRight(name, "0123456789.-")
}

// expected reports whether the program was predicted: the name it was
// called by, and (when the manifest knows its content) one of the names
// its content has or its file's name.
func (c *traceCall) expected(argv []string, exe string, id identity) bool {
	if !c.expect[path.Base(argv[0])] {
		return false
	}
	if len(id.names) == 0 || c.expect[path.Base(exe)] {
		return true
	}
	for _, n := range id.names {
		if c.expect[n] {
			return true
		}
	}
	return false
}

// parentChain lists pid's parents up to (and including) the command's
// root, nearest first, each as "argv0 (pid)".
func parentChain(pid, root int) []string {
	var chain []string
	for range maxParents {
		if pid == root || pid <= 1 {
			break
		}
		pid = parentOf(pid)
		if pid <= 0 {
			break
		}
		chain = append(chain, procArgv0(pid)+" ("+strconv.Itoa(pid)+")")
	}
	return chain
}

// parentOf reads the parent pid from /proc/PID/stat (after the command
// name, which may contain anything up to its last ')').
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(string(f[1]))
	return pp
}

func procArgv0(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return "?"
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return path.Base(string(b))
}
