package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash evaluates the subscript of an indexed array as arithmetic, and
// expands $(...) and backticks in it even when it is quoted:
// a['$(rm -f x)']=1, ${a['$(rm -f x)']}, read 'a[$(rm -f x)]' and
// test -v 'a[$(rm -f x)]' all run rm. The analysis does not know which
// arrays are associative, so every subscript that is not a number, @ or *
// is treated as code: the commands in it are analysed, and the subscript
// itself falls under commands.dynamic (the arithmetic reads variables,
// whose values bash evaluates as code in turn).

const subscriptNote = "bash evaluates the array subscript as arithmetic: it runs $(...) in it and evaluates variables as code"

// index checks a subscript parsed by the shell parser (a[...]=, ${a[...]}).
func (a *analyser) index(x syntax.ArithmExpr, d int) {
	w, ok := x.(*syntax.Word)
	if !ok {
		a.arith(x, d)
		return
	}
	if l := w.Lit(); l == "@" || l == "*" {
		return
	}
	// A quoted subscript: bash removes the quotes and evaluates the text.
	quoted, text := len(w.Parts) > 0, ""
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted:
			text += p.Value
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					text += l.Value
				} else {
					quoted = false
				}
			}
		default:
			quoted = false
		}
	}
	if !quoted {
		a.arith(x, d)
		return
	}
	if isArithNumber(strings.TrimSpace(text)) {
		return
	}
	a.codeIn(text, d)
	a.dynamic([]string{"[" + a.source(x) + "]"}, subscriptNote)
}

// codeIn analyses the command substitutions in text that bash expands as
// if it were double-quoted: a quoted subscript, or the value given to an
// integer variable. The parts it adds name the commands that would run.
func (a *analyser) codeIn(text string, d int) {
	if !strings.ContainsAny(text, "$`") || a.stopped {
		return
	}
	if a.level >= maxRecursion || len(text) > maxScriptBytes {
		return // the caller adds a commands.dynamic part anyway
	}
	w, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader(text))
	if err != nil {
		return
	}
	saved := a.src
	a.src = text
	a.level++
	for _, p := range w.Parts {
		a.wordPart(p, d+1)
	}
	a.level--
	a.src = saved
}

// nameArg checks a variable name given to a builtin as a word (read NAME,
// printf -v NAME, test -v NAME, unset NAME, declare NAME=...): a name
// known only at run time, and a subscript that is not a plain number, are
// commands.dynamic; assigning a protected variable is always denied.
// assigns says whether the builtin assigns the variable.
func (a *analyser) nameArg(argv []string, w word, assigns bool, d int) {
	if w.kind != wStatic {
		a.dynamic(argv, "variable named only at run time; its name may hold an array subscript, which bash evaluates as code")
		return
	}
	name, _, _ := strings.Cut(w.text, "=")
	name = strings.TrimSuffix(name, "+")
	if i := strings.IndexByte(name, '['); i >= 0 {
		sub := strings.TrimSuffix(name[i+1:], "]")
		name = name[:i]
		if s := strings.TrimSpace(sub); s != "@" && s != "*" && !isArithNumber(s) {
			a.codeIn(sub, d)
			a.dynamic(argv, subscriptNote)
		}
	}
	if !assigns {
		return
	}
	if a.protected(name) {
		a.always("always.assign", argv, a.assignWhy(name))
	}
	if a.intVars[name] {
		a.dynamic(argv, name+" is an integer variable (declare -i): bash evaluates what is assigned to it as arithmetic")
	}
}

// intAssign checks a value assigned to a variable declared with -i in the
// script: bash evaluates it as arithmetic, so a[$(cmd)] in it runs cmd.
func (a *analyser) intAssign(argv []string, name string, val *syntax.Word, d int) {
	if !a.intVars[name] || val == nil {
		return
	}
	if w := a.word(val, d); w.kind == wStatic && isArithNumber(strings.TrimSpace(w.text)) {
		return
	} else if w.kind == wStatic {
		a.codeIn(w.text, d)
	}
	a.dynamic(argv, name+" is an integer variable (declare -i): bash evaluates the value as arithmetic")
}

// markInt records variables declared integer (declare/typeset/local -i).
func (a *analyser) markInt(name string) {
	if a.intVars == nil {
		a.intVars = map[string]bool{}
	}
	a.intVars[name] = true
}

// readOpts are the options of read that take an argument; -a names an
// array.
const readOptArgs = "adinNptu"

// nameBuiltins checks the builtins that take variable names as arguments.
func (a *analyser) nameBuiltins(base string, cl *cmdline, d int) {
	args := cl.words[1:]
	argv := cl.argv()
	switch base {
	case "read":
		names, _ := shortOpts(args, readOptArgs, "a")
		for _, w := range names {
			a.nameArg(argv, w, true, d)
		}
	case "mapfile", "readarray":
		names, vals := shortOpts(args, "dnOsuCc", "")
		for _, w := range names {
			a.nameArg(argv, w, true, d)
		}
		if cb, ok := vals['C']; ok {
			if cb.kind != wStatic {
				a.dynamic(argv, "mapfile -C runs a callback known only at run time")
			} else {
				a.nested(cb.text+" 0 line", d)
			}
		}
	case "printf":
		if _, vals := shortOpts(args, "v", ""); len(vals) > 0 {
			a.nameArg(argv, vals['v'], true, d)
		}
	case "getopts":
		if len(args) >= 2 {
			a.nameArg(argv, args[1], true, d)
		}
	case "wait":
		if _, vals := shortOpts(args, "p", ""); len(vals) > 0 {
			a.nameArg(argv, vals['p'], true, d)
		}
	case "unset":
		names, _ := shortOpts(args, "", "")
		for _, w := range names {
			a.nameArg(argv, w, false, d)
		}
	case "test", "[":
		for i := 0; i+1 < len(args); i++ {
			if args[i].kind == wStatic && (args[i].text == "-v" || args[i].text == "-R") {
				a.nameArg(argv, args[i+1], false, d)
			}
		}
	case "export", "declare", "typeset", "local", "readonly":
		integer := false
		for _, w := range args {
			if w.kind == wStatic && len(w.text) > 1 && w.text[0] == '-' {
				integer = integer || strings.Contains(w.text, "i")
				continue
			}
			name, _, _ := strings.Cut(w.text, "=")
			if integer && w.kind == wStatic && isName(name) {
				a.markInt(name)
			}
			a.nameArg(argv, w, strings.Contains(w.text, "=") || w.kind != wStatic, d)
		}
	}
}

// shortOpts splits the arguments of a builtin into operands and the values
// of its short options that take an argument (withArg); the values of the
// options in nameOpts are returned among the operands too (read -a NAME).
// Parsing stops at "--" or the first operand.
func shortOpts(args []word, withArg, nameOpts string) (operands []word, vals map[byte]word) {
	vals = map[byte]word{}
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if w.kind != wStatic || len(w.text) < 2 || w.text[0] != '-' {
			break
		}
		if w.text == "--" {
			i++
			break
		}
		for j := 1; j < len(w.text); j++ {
			c := w.text[j]
			if strings.IndexByte(withArg, c) < 0 {
				continue
			}
			var v word
			if j+1 < len(w.text) {
				v = staticWord(w.text[j+1:])
			} else if i+1 < len(args) {
				i++
				v = args[i]
			}
			vals[c] = v
			if strings.IndexByte(nameOpts, c) >= 0 {
				operands = append(operands, v)
			}
			break
		}
	}
	return append(operands, args[min(i, len(args)):]...), vals
}
