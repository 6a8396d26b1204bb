package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call analyses a simple command: its assignments, its words and then the
// command line itself.
func (a *analyser) call(c *syntax.CallExpr, d int, in stdinInfo) {
	for _, as := range c.Assigns {
		a.assign(as, d)
	}
	if len(c.Args) == 0 {
		if len(c.Assigns) > 0 {
			argv := make([]string, len(c.Assigns))
			for i, as := range c.Assigns {
				argv[i] = a.source(as)
			}
			a.add(Part{Argv: argv, Verdict: Allow, Rule: "assign", Note: "variable assignment; runs no command"}, nil)
		}
		return
	}
	cl := &cmdline{words: make([]word, 0, len(c.Args))}
	for _, w := range c.Args {
		cl.words = append(cl.words, a.word(w, d))
	}
	a.simple(cl, d, in, 0)
}

func (a *analyser) assign(as *syntax.Assign, d int) {
	if as.Name != nil && protectedVar(as.Name.Value) {
		a.always("always.assign", []string{a.source(as)}, assignWhy(as.Name.Value))
	}
	if as.Index != nil {
		a.index(as.Index, d)
	}
	if as.Value != nil {
		a.word(as.Value, d)
	}
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			if e.Index != nil {
				a.index(e.Index, d)
			}
			if e.Value != nil {
				a.word(e.Value, d)
			}
		}
	}
}

func (a *analyser) rulePart(cl *cmdline) {
	a.add(a.p.cmd.decide(cl), cl)
}

// simple decides one command line; wd counts the wrappers around it.
func (a *analyser) simple(cl *cmdline, d int, in stdinInfo, wd int) {
	if a.stopped || len(cl.words) == 0 {
		return
	}
	a.ncmds++
	if a.ncmds > maxCommands {
		a.limit("limits.commands", "the script has more than 10000 simple commands")
		return
	}
	if wd > maxRecursion {
		a.limit("limits.recursion", "commands are wrapped more than 8 deep")
		return
	}
	w0 := cl.words[0]
	if w0.kind != wStatic {
		a.dynamic(cl.argv(), "command word known only at run time")
		return
	}
	if hasUnsafeRune(w0.text) {
		a.always("always.nonascii", visibleArgv(cl.argv()), "the command word contains non-ASCII or invisible characters")
		return
	}
	name := w0.text
	base := name
	if strings.Contains(name, "/") {
		base = path.Base(name)
	}
	switch name {
	case "source", ".":
		a.always("always.source", cl.argv(), "source and . run a file's contents as commands, unseen by the analysis")
		return
	case "alias":
		a.always("always.alias", cl.argv(), "an alias can make any word run any command")
		return
	case "trap":
		a.always("always.trap", cl.argv(), "trap runs code on signals and exit, unseen by the analysis")
		return
	case "hash":
		for _, w := range cl.words[1:] {
			if strings.HasPrefix(w.text, "-") && strings.Contains(w.text, "p") {
				a.always("always.hash", cl.argv(), "hash -p makes a command name run any file")
				return
			}
		}
	case "enable":
		a.always("always.enable", cl.argv(), "enable can load builtins from a shared object or shadow commands")
		return
	}
	a.rulePart(cl)
	a.checkArgs(base, cl)
	a.checkVarArgs(base, cl)
	a.trackCd(base, cl)
	a.unwrap(base, cl, d, in, wd)
}

// checkVarArgs denies builtins that assign a protected variable by name.
func (a *analyser) checkVarArgs(base string, cl *cmdline) {
	args := cl.words[1:]
	switch base {
	case "read", "mapfile", "readarray":
		for _, w := range args {
			if w.kind == wStatic && protectedVar(w.text) {
				a.always("always.assign", cl.argv(), assignWhy(w.text))
				return
			}
		}
	case "printf":
		for i, w := range args {
			if w.kind != wStatic {
				continue
			}
			if w.text == "-v" && i+1 < len(args) {
				a.assignText(cl.argv(), args[i+1].text+"=", false)
			} else if v, ok := strings.CutPrefix(w.text, "-v"); ok && v != "" {
				a.assignText(cl.argv(), v+"=", false)
			}
		}
	case "getopts":
		if len(args) >= 2 && protectedVar(args[1].text) {
			a.always("always.assign", cl.argv(), assignWhy(args[1].text))
		}
	case "export", "declare", "typeset", "local", "readonly":
		for _, w := range args {
			if w.kind == wStatic && !strings.HasPrefix(w.text, "-") {
				a.assignText(cl.argv(), w.text, false)
			}
		}
	}
}

// assignText checks an assignment written as one word, NAME=value or
// NAME[sub]=value.
func (a *analyser) assignText(argv []string, s string, nameref bool) {
	name, _, hasEq := strings.Cut(s, "=")
	name = strings.TrimSuffix(name, "+")
	if i := strings.IndexByte(name, '['); i >= 0 {
		if strings.ContainsAny(name[i:], "$`") {
			a.dynamic(argv, "the array subscript is evaluated as code")
		}
		name = name[:i]
	}
	if protectedVar(name) && (hasEq || nameref) {
		a.always("always.assign", argv, assignWhy(name))
	}
}

// trackCd records where cd may move the shell, for relative redirections.
func (a *analyser) trackCd(base string, cl *cmdline) {
	if base != "cd" && base != "pushd" && base != "popd" {
		return
	}
	if base == "popd" {
		a.cwdUnknown = true
		return
	}
	var target *word
	for i := 1; i < len(cl.words); i++ {
		w := &cl.words[i]
		if w.kind == wStatic && len(w.text) > 1 && w.text[0] == '-' && w.text != "--" {
			continue
		}
		if w.text == "--" && w.kind == wStatic {
			continue
		}
		target = w
		break
	}
	if target == nil || target.kind != wStatic || target.text == "-" || target.text == "" ||
		strings.HasPrefix(target.text, "~") || strings.HasPrefix(target.text, "+") {
		a.cwdUnknown = true
		return
	}
	if len(a.cwds) == 0 {
		a.cwds = []string{workspace}
	}
	for _, c := range a.cwds {
		n := path.Join(c, target.text)
		if path.IsAbs(target.text) {
			n = path.Clean(target.text)
		}
		seen := false
		for _, x := range a.cwds {
			seen = seen || x == n
		}
		if !seen {
			a.cwds = append(a.cwds, n)
		}
		if len(a.cwds) > 16 {
			a.cwdUnknown = true
			return
		}
	}
}

// nested analyses a script given literally to bash -c, eval, watch or a
// shell's stdin.
func (a *analyser) nested(src string, d int) {
	a.level++
	defer func() { a.level-- }()
	if a.level > maxRecursion {
		a.limit("limits.recursion", "bash -c / eval nest more than 8 deep")
		return
	}
	a.script(src, d+1)
}

func visibleArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, s := range argv {
		out[i] = Visible(s)
	}
	return out
}
