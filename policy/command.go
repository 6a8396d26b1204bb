package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call analyses a simple command: its assignments, its words and then the
// command line itself.
func (a *analyser) call(c *syntax.CallExpr, d int, in stdinInfo) {
	var cmd []string // the command the assignments are made for, to name it
	for _, w := range c.Args {
		cmd = append(cmd, a.source(w))
	}
	for _, as := range c.Assigns {
		a.assign(as, d, cmd)
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

// assign checks one assignment; cmd is the command it prefixes, if any.
func (a *analyser) assign(as *syntax.Assign, d int, cmd []string) {
	if as.Name == nil {
		as = &syntax.Assign{Array: as.Array, Name: &syntax.Lit{}}
	}
	argv := append([]string{as.Name.Value}, cmd...)
	if as.Name.ValuePos.IsValid() {
		argv[0] = a.source(as)
	}
	if a.protected(as.Name.Value) {
		a.always("always.assign", argv, a.assignWhy(as.Name.Value))
	}
	if as.Index != nil {
		a.index(as.Index, d)
	}
	if as.Value != nil {
		a.word(as.Value, d)
		a.intAssign(argv, as.Name.Value, as.Value, d)
	}
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			if e.Index != nil {
				a.index(e.Index, d)
			}
			if e.Value != nil {
				a.word(e.Value, d)
				a.intAssign(argv, as.Name.Value, e.Value, d)
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
	if base == "git" && a.gitChdir(cl, d, in, wd) {
		return
	}
	a.add(a.guardDestructive(base, cl, a.p.cmd.decide(cl)), cl)
	a.lastCmd = len(a.parts) - 1
	if !a.argvMode && sessionPath(name) {
		// Known at exec time by content; up front by where it lives
		// (after the rule's part: on a tie the rule decides).
		a.add(a.p.unknownPart(cl.argv()), nil)
	}
	if base == "git" {
		a.gitOptions(cl)
	}
	a.checkArgs(base, cl)
	targets := fileTargets(base, cl.words[1:])
	if base == "git" {
		targets = gitFiles(cl.words[1:])
	}
	a.checkFiles(base, cl, targets)
	a.nameBuiltins(base, cl, d)
	a.shellOpts(base, cl)
	a.trackCd(base, cl)
	a.unwrap(base, cl, d, in, wd)
}

// assignText checks an assignment written as one word, NAME=value or
// NAME[sub]=value, or a name made a reference (declare -n NAME).
func (a *analyser) assignText(argv []string, s string, nameref bool, d int) {
	name, _, hasEq := strings.Cut(s, "=")
	a.nameArg(argv, staticWord(name), false, d)
	name = strings.TrimSuffix(name, "+")
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if a.protected(name) && (hasEq || nameref) {
		a.always("always.assign", argv, a.assignWhy(name))
	}
	if nameref {
		value, _ := strings.CutPrefix(s[len(name):], "=")
		a.refTarget(argv, name, staticWord(value), hasEq)
	}
	if hasEq && a.intVars[name] {
		a.dynamic(argv, name+" is an integer variable (declare -i): bash evaluates the value as arithmetic")
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
