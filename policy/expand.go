package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word analyses one shell word: it removes quotes from the parts known
// statically, and walks every expansion inside it (command and process
// substitutions are analysed as scripts; arithmetic is checked).
func (a *analyser) word(w *syntax.Word, d int) word {
	if w == nil {
		return word{}
	}
	var sb strings.Builder
	res := word{}
	dyn, glob := false, false
	afterDyn := 0
	markDyn := func(split bool) {
		if !dyn {
			res.prefix = sb.String()
		}
		dyn = true
		res.split = res.split || split
		afterDyn = sb.Len()
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if unquotedExpands(p.Value) {
				glob = true
			}
			sb.WriteString(unescapeUnquoted(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(ansiC(p.Value))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					sb.WriteString(unescapeDouble(l.Value))
					continue
				}
				a.wordPart(q, d)
				markDyn(false)
			}
		case *syntax.ExtGlob:
			glob = true
			sb.WriteString(a.source(p))
		case *syntax.ProcSubst:
			a.wordPart(p, d)
			markDyn(false)
		default:
			a.wordPart(p, d)
			markDyn(true)
		}
	}
	if l, ok := firstLit(w); ok && strings.HasPrefix(l.Value, "~") && !dyn {
		// Tilde expansion: a home directory known only at run time.
		text := sb.String()
		res.prefix, res.suffix = "", ""
		if i := strings.IndexByte(text, '/'); i >= 0 && !glob {
			res.suffix = text[i:]
		}
		res.kind, res.text = wDynamic, a.source(w)
		return res
	}
	switch {
	case dyn:
		res.kind = wDynamic
		res.text = a.source(w)
		res.suffix = sb.String()[afterDyn:]
		if glob {
			res.prefix, res.suffix = "", ""
		}
	case glob:
		res.kind = wGlob
		res.text = sb.String()
		res.split = strings.Contains(a.source(w), "{")
	default:
		res.text = sb.String()
	}
	return res
}

// wordPart walks the expansions inside one word part.
func (a *analyser) wordPart(p syntax.WordPart, d int) {
	if a.stopped {
		return
	}
	switch p := p.(type) {
	case *syntax.CmdSubst:
		a.stmts(p.Stmts, d+1, stdinInfo{})
	case *syntax.ProcSubst:
		in := stdinInfo{}
		if p.Op == syntax.CmdOut {
			in.kind = stdinPipe
		}
		a.stmts(p.Stmts, d+1, in)
	case *syntax.ArithmExp:
		a.arith(p.X, d)
	case *syntax.ParamExp:
		a.param(p, d)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			a.wordPart(q, d)
		}
	}
}

func (a *analyser) param(p *syntax.ParamExp, d int) {
	if d > maxDepth {
		a.limit("limits.depth", "the script nests expansions more than 64 deep")
		return
	}
	if p.Excl && p.Names == 0 && p.Index == nil {
		a.dynamic([]string{a.source(p)}, "indirect expansion ${!name} may evaluate an array subscript as code")
	}
	if p.Index != nil {
		a.index(p.Index, d)
	}
	if p.Slice != nil {
		if p.Slice.Offset != nil {
			a.arith(p.Slice.Offset, d)
		}
		if p.Slice.Length != nil {
			a.arith(p.Slice.Length, d)
		}
	}
	if p.Repl != nil {
		a.word(p.Repl.Orig, d+1)
		a.word(p.Repl.With, d+1)
	}
	if p.Exp != nil {
		if (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) && p.Param != nil && a.protected(p.Param.Value) {
			// ${NAME=value}, ${NAME:=value} assign NAME.
			a.always("always.assign", []string{a.source(p)}, a.assignWhy(p.Param.Value))
		}
		if p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && strings.Contains(p.Exp.Word.Lit(), "P") {
			a.dynamic([]string{a.source(p)}, "${name@P} expands the value as a prompt, running command substitutions in it")
		}
		a.word(p.Exp.Word, d+1)
	}
	if p.NestedParam != nil {
		a.wordPart(p.NestedParam, d+1)
	}
}

// redirect checks one redirection. It returns the new stdin of the
// command when the redirection replaces it.
func (a *analyser) redirect(r *syntax.Redirect, d int) (stdinInfo, bool) {
	fd := ""
	if r.N != nil {
		fd = r.N.Value
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		a.word(r.Word, d)
		text, static := a.heredoc(r, d)
		return stdinInfo{kind: stdinLiteral, text: text, static: static}, fd == "" || fd == "0"
	case syntax.WordHdoc:
		w := a.word(r.Word, d)
		return stdinInfo{kind: stdinLiteral, text: w.text + "\n", static: w.kind == wStatic}, fd == "" || fd == "0"
	case syntax.DplIn, syntax.DplOut:
		w := a.word(r.Word, d)
		if w.kind == wStatic && isFdWord(w.text) {
			return stdinInfo{kind: stdinOther}, r.Op == syntax.DplIn && (fd == "" || fd == "0")
		}
		a.target(r.Op.String(), w, r.Op == syntax.DplOut)
		return stdinInfo{kind: stdinOther}, r.Op == syntax.DplIn && (fd == "" || fd == "0")
	case syntax.RdrIn:
		a.target("<", a.word(r.Word, d), false)
		return stdinInfo{kind: stdinOther}, fd == "" || fd == "0"
	case syntax.RdrInOut:
		w := a.word(r.Word, d)
		a.target("<>", w, true)
		return stdinInfo{kind: stdinOther}, fd == "" || fd == "0"
	default: // >, >>, >|, &>, &>> and zsh variants
		a.target(r.Op.String(), a.word(r.Word, d), true)
	}
	return stdinInfo{}, false
}

func isFdWord(s string) bool {
	s = strings.TrimSuffix(s, "-")
	return s == "" || strings.Trim(s, "0123456789") == ""
}

// heredoc returns the body of a heredoc and whether it is fully static.
// Expansions in the body (unquoted delimiter) are walked.
func (a *analyser) heredoc(r *syntax.Redirect, d int) (string, bool) {
	if r.Hdoc == nil {
		return "", true
	}
	quoted := strings.ContainsAny(a.source(r.Word), `'"\`)
	var sb strings.Builder
	static := true
	for _, p := range r.Hdoc.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			if quoted {
				sb.WriteString(l.Value)
			} else {
				sb.WriteString(unescapeSome(l.Value, false))
			}
			continue
		}
		static = false
		a.wordPart(p, d)
	}
	return sb.String(), static
}

// target checks a redirection target. Literal targets are decided by the
// file rules once the whole script is known (cd may move the shell).
func (a *analyser) target(op string, w word, write bool) {
	if w.kind != wStatic {
		if w.kind == wDynamic && isDevNet(w.prefix) {
			a.always("always.devtcp", []string{op, w.text}, devNetWhy)
			return
		}
		a.dynamic([]string{op, w.text}, "redirection target known only at run time")
		return
	}
	if isDevNet(w.text) {
		a.always("always.devtcp", []string{op, w.text}, devNetWhy)
		return
	}
	if redirExempt(w.text) {
		return
	}
	a.redirs = append(a.redirs, a.pending(pendingRedir{op: op, target: w.text, write: write}))
}

const devNetWhy = "redirections to /dev/tcp and /dev/udp open network connections"

func isDevNet(s string) bool {
	for _, c := range []string{s, path.Clean("/" + s)} {
		if strings.HasPrefix(c, "/dev/tcp") || strings.HasPrefix(c, "/dev/udp") {
			return true
		}
	}
	return strings.HasPrefix(strings.TrimLeft(s, "/"), "dev/tcp") || strings.HasPrefix(strings.TrimLeft(s, "/"), "dev/udp")
}

func redirExempt(s string) bool {
	switch s {
	case "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	n, ok := strings.CutPrefix(s, "/dev/fd/")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// finishRedirs decides the literal redirection targets against the file
// rules, from every directory the shell may be in.
func (a *analyser) finishRedirs() {
	for _, r := range a.redirs {
		if a.stopped {
			return
		}
		argv := []string{r.op, r.target}
		if r.argv != nil {
			argv = r.argv
		}
		if !strings.HasPrefix(unalias(r.target), "/") && (a.cwdUnknown || r.unknownDir) {
			a.dynamic(argv, "relative path "+r.target+" written in a directory known only at run time")
			continue
		}
		dirs := a.cwds
		if r.dirs != nil {
			dirs = r.dirs
		}
		if len(dirs) == 0 {
			dirs = []string{workspace}
		}
		var best Part
		for i, dir := range dirs {
			target := unalias(r.target)
			if !path.IsAbs(target) {
				target = path.Join(dir, target)
			}
			p := a.p.decideFile(target, r.write)
			if i == 0 || p.Verdict > best.Verdict {
				best = p
			}
		}
		if r.argv != nil && (best.Verdict == Allow || a.parts[r.cmdPart].Verdict == Deny) {
			continue // a file a command names adds a part only when it changes the decision
		}
		best.Argv = argv
		a.add(best, nil)
	}
}

func firstLit(w *syntax.Word) (*syntax.Lit, bool) {
	if len(w.Parts) == 0 {
		return nil, false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return l, ok
}
