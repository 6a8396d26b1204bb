package executor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// maxArgv bounds the argv read at an exec stop; a longer one is refused
// (it cannot be judged whole).
const maxArgv = 1 << 20

// execArgv reads the argv of the image pid has just executed (at its exec
// stop /proc/PID/cmdline is the new image's) and the executable's path.
// named tells whether argv[0] names the executable (by its name or as the
// process would look it up); when it does not (bash's `exec -a ls rm …`),
// the rules judge both names. An empty argv becomes the executable's path.
func execArgv(pid int) (argv []string, exe string, named bool, err error) {
	proc := "/proc/" + strconv.Itoa(pid)
	exe, err = os.Readlink(proc + "/exe")
	if err != nil {
		return nil, "", false, err
	}
	f, err := os.Open(proc + "/cmdline")
	if err != nil {
		return nil, exe, false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxArgv+1))
	f.Close()
	if err != nil {
		return nil, exe, false, err
	}
	if len(b) > maxArgv {
		return []string{exe}, exe, true, errors.New("the argument list is over 1 MiB")
	}
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) > 0 {
		argv = strings.Split(string(b), "\x00")
	}
	if len(argv) == 0 || argv[0] == "" {
		return append([]string{exe}, argv[min(1, len(argv)):]...), exe, true, nil
	}
	named = path.Base(argv[0]) == path.Base(exe) || sameFile(proc, argv[0], exe)
	return argv, exe, named, nil
}

// sameFile reports whether name, as the process would look it up (relative
// to its cwd, or through PATH), is the executable (an alias such as
// python3 → python3.11).
func sameFile(proc, name, exe string) bool {
	want, err := os.Stat(proc + "/exe")
	if err != nil {
		return false
	}
	var cands []string
	if strings.Contains(name, "/") {
		if !path.IsAbs(name) {
			name = proc + "/cwd/" + name
		}
		cands = []string{name}
	} else {
		for _, dir := range strings.Split(envPath(proc), ":") {
			if dir == "" {
				dir = "."
			}
			if !path.IsAbs(dir) {
				dir = proc + "/cwd/" + dir
			}
			cands = append(cands, dir+"/"+name)
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}

func envPath(proc string) string {
	b, err := os.ReadFile(proc + "/environ")
	if err == nil {
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				return v
			}
		}
	}
	return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

// programs counts the programs that ran in a call, by the name each ran
// under and what the image's manifest knows it as, up to a cap.
type programs struct {
	list    []wire.Program
	index   map[wire.Program]int // the program without its count → its place in list
	dropped int
}

const maxPrograms = 128

// add counts one program: argv0 the name it ran under, program what the
// image knows it as ("" when the manifest does not), toolchain the
// toolchain it ran as part of, unknown when its file is not the image's.
func (p *programs) add(argv0, program, toolchain string, unknown bool) {
	k := wire.Program{Name: path.Base(argv0), Program: program, Toolchain: toolchain, Unknown: unknown}
	if p.index == nil {
		p.index = map[wire.Program]int{}
	}
	i, ok := p.index[k]
	if !ok {
		if len(p.list) >= maxPrograms {
			p.dropped++
			return
		}
		i = len(p.list)
		p.index[k] = i
		p.list = append(p.list, k)
	}
	p.list[i].Count++
}
