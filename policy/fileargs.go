package policy

import "strings"

// checkFiles checks the files a command names through its options and
// operands (sort -o FILE, cp SRC DST, tar -x -C DIR, xargs -a FILE, ...):
// written files are decided by files.write like redirections, once the
// script is known; read files by files.read's deny globs.
func (a *analyser) checkFiles(base string, cl *cmdline, targets []fileTarget) {
	for _, t := range targets {
		if a.stopped {
			return
		}
		switch t.role {
		case roleCode:
			if a.argvMode {
				continue // the command is judged when it is executed
			}
			if t.w.kind == wStatic {
				a.nested(t.w.text, 0)
			} else {
				a.dynamic(cl.argv(), base+" "+t.opt+" runs a command known only at run time")
			}
		case roleRead:
			if t.w.kind != wStatic || t.w.text == "-" || checkPath(t.w.text) != "" {
				continue
			}
			if p, ok := a.deniedArg(t.w.text, false); ok {
				p.Argv = cl.argv()
				a.add(p, nil)
			}
		case roleWrite, roleWriteDir:
			if t.w.kind != wStatic {
				if t.opt != "" && t.opt != "-i" {
					a.dynamic(cl.argv(), base+" "+t.opt+" writes a file named only at run time")
				}
				continue
			}
			s := t.w.text
			if s == "" || s == "-" || redirExempt(s) {
				continue
			}
			op := base + " " + t.opt
			if t.opt == "" {
				op = base
			}
			a.redirs = append(a.redirs, a.pending(pendingRedir{op: op, target: s, write: true, argv: cl.argv(), cmdPart: a.lastCmd}))
		}
	}
}

// readAliases are the other spellings of a file an argument may read:
// the value of an attached short option (-a.env, -f.env), a response or
// data file (@.env, name=@.env, name=<.env) and a git object path
// (HEAD:.env, :.env).
func readAliases(arg string) []string {
	var out []string
	if len(arg) > 2 && arg[0] == '-' && arg[1] != '-' {
		out = append(out, arg[2:])
	}
	v := arg
	if _, after, ok := strings.Cut(arg, "="); ok {
		v = after
	}
	if len(v) > 1 && (v[0] == '@' || v[0] == '<') {
		out = append(out, v[1:])
	}
	if i := strings.IndexByte(arg, ':'); i >= 0 && i+1 < len(arg) && !strings.Contains(arg[:i], "/") {
		out = append(out, strings.TrimPrefix(arg[i+1:], "/"))
	}
	return out
}
