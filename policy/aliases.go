package policy

import (
	"path"
	"strings"
)

// unalias rewrites the names under which the sandbox's files are also
// reachable: /proc/PID/root/X (and /proc/self/root, thread-self, task/TID)
// is /X; /proc/PID/cwd/X is X relative to the shell's directory; a
// directory opened as a descriptor (/dev/fd/N/X, /proc/PID/fd/N/X) is taken
// as the shell's directory too. The path is cleaned first, so
// //workspace/./x and /workspace/../workspace/x are /workspace/x. It
// returns p unchanged (but cleaned, if absolute) when no alias applies.
func unalias(p string) string {
	for range 8 { // /proc/self/root/proc/self/root/...
		if !strings.HasPrefix(p, "/") {
			return p
		}
		p = path.Clean(p)
		rest, ok := strings.CutPrefix(p, "/proc/")
		if !ok {
			rest, ok = strings.CutPrefix(p, "/dev/fd/")
			if !ok {
				return p
			}
			_, after, found := strings.Cut(rest, "/")
			if !found {
				return p
			}
			return "./" + after
		}
		// /proc/<pid|self|thread-self>[/task/<tid>]/<link>/...
		segs := strings.Split(rest, "/")
		if len(segs) < 2 || !procPid(segs[0]) {
			return p
		}
		segs = segs[1:]
		if len(segs) >= 3 && segs[0] == "task" && procPid(segs[1]) {
			segs = segs[2:]
		}
		switch segs[0] {
		case "root":
			p = "/" + strings.Join(segs[1:], "/")
		case "cwd":
			return "./" + strings.Join(segs[1:], "/")
		case "fd":
			if len(segs) < 3 {
				return p
			}
			return "./" + strings.Join(segs[2:], "/")
		default:
			return p
		}
	}
	return p
}

func procPid(s string) bool {
	return s == "self" || s == "thread-self" || s != "" && strings.Trim(s, "0123456789") == ""
}
