package policy

// DecideArgv judges one program's argv as it is actually executed (the
// exec-time layer calls it for every execve in the sandbox). There is no
// shell parsing: every word is taken literally. argv[0] matches rules by
// its basename, the same command rules apply, files named by the
// program's options and operands are checked against the file rules
// (relative paths are taken relative to /workspace), and wrappers whose
// wrapped command is in argv (env, nice, timeout, xargs, find -exec, ...)
// are unwrapped and the wrapped command judged too. Shells and eval are
// not looked into: the programs they start are judged at their own exec.
//
// argv[0] is chosen by the program that calls execve (exec -a NAME): the
// caller should pass the path of the executed file as argv[0], or use
// DecideExec.
func (p *Policy) DecideArgv(argv []string) Decision {
	if len(argv) == 0 {
		return combine([]Part{{Argv: []string{}, Verdict: Deny, Rule: "always.empty", Why: "empty argv"}})
	}
	a := &analyser{p: p, argvMode: true}
	cl := &cmdline{words: make([]word, len(argv))}
	for i, s := range argv {
		cl.words[i] = word{text: s}
	}
	a.simple(cl, 0, stdinInfo{kind: stdinOther}, 0)
	if !a.stopped {
		a.finishRedirs()
	}
	if len(a.parts) == 0 {
		a.add(Part{Argv: argv, Verdict: Allow, Rule: "empty", Note: "nothing to decide"}, nil)
	}
	return combine(a.parts)
}

// DecideExec judges an execve of the file exe with argv: by the file's
// name and by argv[0] (which the caller of execve chooses freely, and
// which multi-call programs such as busybox dispatch on). The most
// restrictive of the two decisions is returned.
func (p *Policy) DecideExec(exe string, argv []string) Decision {
	if len(argv) == 0 {
		argv = []string{exe}
	}
	d := p.DecideArgv(argv)
	if exe == "" || exe == argv[0] {
		return d
	}
	alt := append([]string{exe}, argv[1:]...)
	if e := p.DecideArgv(alt); e.Verdict > d.Verdict {
		return e
	}
	return d
}
