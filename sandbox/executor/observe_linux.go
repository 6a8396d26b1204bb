package executor

import (
	"bytes"
	"os"
	"path"
	"slices"
	"strconv"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// maxNoted bounds the program alarms of one call; the rest are counted.
const maxNoted = 32

// maxParents bounds the parent chain of one alarm.
const maxParents = 8

// observe notes a program that runs: an "unexpected_exec" alarm when the
// up-front analysis did not predict it (run through an interpreter, under
// another name, by a generated script), and an "unknown_binary" alarm
// when its file is not one of the image's executables (it ran: the
// policy's commands.unknown_binaries let it, "allow and record"). Each carries the argv and the
// parent chain.
func (c *traceCall) observe(pid int, argv []string, exe string, id identity) {
	unexpected := c.expect != nil && !c.expected(argv, exe, id) && !c.viaScript(pid, argv)
	unknown := c.ids != nil && !id.known
	if !unexpected && !unknown {
		return
	}
	if len(c.noted) >= maxNoted {
		c.notedOver++
		return
	}
	parents := parentChain(pid, c.root)
	shown := argv
	if path.Base(argv[0]) != path.Base(exe) {
		shown = append([]string{exe}, argv[1:]...)
	}
	if unexpected {
		why := "the up-front analysis of the command did not predict this program"
		if len(id.names) > 0 && !slices.Contains(id.names, path.Base(argv[0])) {
			why += " (by content it is the image's " + id.names[0] + ")"
		}
		c.noted = append(c.noted, wire.Alarm{Path: []byte(exe), What: "unexpected_exec", Action: "reported", Rule: why, Argv: shown, Parents: parents})
	}
	if unknown {
		c.noted = append(c.noted, wire.Alarm{Path: []byte(exe), What: "unknown_binary", Action: "allowed",
			Rule: "commands.unknown_binaries: not one of the image's executables", Argv: shown, Parents: parents})
	}
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
