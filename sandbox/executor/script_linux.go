package executor

import (
	"bytes"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxShebang is what the kernel reads of a script's #! line
// (BINPRM_BUF_SIZE).
const maxShebang = 256

// viaScript reports whether the program is the #! interpreter of a script
// the up-front analysis predicted (./run.sh, a venv's bin/pip, npm): the
// kernel runs the interpreter named on the script's first line with the
// line's optional argument and then the script's path as its argv, so the
// script is the program that was called. For #!/usr/bin/env NAME, env and
// then NAME (argv NAME SCRIPT ...) run it. Only the unexpected_exec report
// weighs this; the exec-time rules judge the interpreter by its own names
// and content either way.
func (c *traceCall) viaScript(pid int, argv []string) bool {
	for i := 1; i <= 2 && i < len(argv); i++ {
		script := argv[i]
		if !c.expect[path.Base(script)] {
			continue
		}
		interp, arg, ok := shebang(pid, script)
		if !ok {
			continue
		}
		switch {
		case i == 1 && argv[0] == interp && arg == "":
			return true
		case i == 2 && argv[0] == interp && argv[1] == arg:
			return true
		case i == 1 && path.Base(interp) == "env" && arg != "" && argv[0] == arg:
			return true
		}
	}
	return false
}

// shebang reads the #! line of the file name (relative to pid's working
// directory) as the kernel does: the interpreter and the one optional
// argument. Only a regular file is read (never blocking on a FIFO).
func shebang(pid int, name string) (interp, arg string, ok bool) {
	if !path.IsAbs(name) {
		name = "/proc/" + strconv.Itoa(pid) + "/cwd/" + name
	}
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", "", false
	}
	buf := make([]byte, maxShebang)
	n, err := unix.Read(fd, buf)
	if err != nil || n < 3 || !bytes.HasPrefix(buf[:n], []byte("#!")) {
		return "", "", false
	}
	line, _, _ := bytes.Cut(buf[2:n], []byte("\n"))
	s := strings.Trim(string(line), " \t")
	interp, arg, _ = strings.Cut(s, " ")
	if i := strings.IndexByte(interp, '\t'); i >= 0 {
		interp, arg = interp[:i], interp[i+1:]+" "+arg
	}
	return interp, strings.Trim(arg, " \t"), interp != ""
}
