package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Limits on hostile input: beyond them a script is denied, in bounded time
// and memory.
const (
	maxScriptBytes = 256 << 10 // limits.size
	maxDepth       = 64        // limits.depth: nesting of compound commands and substitutions
	maxParens      = 200       // limits.depth: '(' nesting checked before parsing
	maxCommands    = 10000     // limits.commands: simple commands in one script
	maxRecursion   = 8         // limits.recursion: bash -c / eval / heredoc-to-shell nesting
	maxArithDepth  = 10000     // limits.depth: nesting of one arithmetic expression
)

type stdinKind uint8

const (
	stdinInherit stdinKind = iota // whatever the shell got
	stdinPipe                     // the output of another command
	stdinLiteral                  // a heredoc or here-string
	stdinOther                    // a file or descriptor
)

type stdinInfo struct {
	kind   stdinKind
	text   string // stdinLiteral: the literal text
	static bool   // stdinLiteral: text is fully known
}

// analyser walks one script and collects its parts.
type analyser struct {
	p       *Policy
	parts   []Part
	lines   []*cmdline // parallel to parts: the command line a rule part was decided from
	ncmds   int
	stopped bool
	level   int    // bash -c / eval nesting
	src     string // source text of the script being walked

	cwds       []string // directories the shell may be in (cd), absolute
	cwdUnknown bool
	intVars    map[string]bool   // declared integer (-i): assignments are arithmetic
	refs       map[string]string // name references → their static targets, "" unknown (namerefs.go)
	scope      *dirScope         // set while a command runs in another directory (env -C, git -C)
	argvMode   bool              // DecideArgv: one executed argv, shells and eval not parsed
	lastCmd    int               // index in parts of the last command line decided by the rules
	redirs     []pendingRedir
}

// pendingRedir is a literal file target, decided by the file rules once
// the whole script is known (cd may move the shell): a redirection, or a
// file a command's option or operand names (argv is then the command).
type pendingRedir struct {
	op, target string
	write      bool
	argv       []string
	dirs       []string // directories it is relative to; nil: the shell's
	unknownDir bool     // relative to a directory known only at run time
	cmdPart    int      // argv set: index in parts of the command's own decision
}

func (a *analyser) add(p Part, cl *cmdline) {
	a.parts = append(a.parts, p)
	a.lines = append(a.lines, cl)
}

func (a *analyser) always(id string, argv []string, why string) {
	a.add(Part{Argv: argv, Verdict: Deny, Rule: id, Why: why}, nil)
}

func (a *analyser) limit(id, why string) {
	a.always(id, []string{}, why)
	a.stopped = true
}

func (a *analyser) dynamic(argv []string, note string) {
	if a.argvMode {
		return // at exec time nothing is left to run time: what runs next is judged at its own exec
	}
	a.add(Part{Argv: argv, Verdict: a.p.cmd.dynamic, Rule: "commands.dynamic", Note: note}, nil)
}

// source returns the text of a node of the script being walked.
func (a *analyser) source(n syntax.Node) string {
	if n == nil {
		return ""
	}
	s, e := n.Pos().Offset(), n.End().Offset()
	if !n.Pos().IsValid() || !n.End().IsValid() || s > e || e > uint(len(a.src)) {
		return "?"
	}
	return a.src[s:e]
}

// script analyses a bash script: the top level, or the argument of bash -c
// or eval, or a heredoc fed to a shell.
func (a *analyser) script(src string, d int) {
	if a.stopped {
		return
	}
	if len(src) > maxScriptBytes {
		a.limit("limits.size", "the script is larger than 256 KiB")
		return
	}
	if parenDepth(src) > maxParens {
		a.limit("limits.depth", "the script nests parentheses more than 200 deep")
		return
	}
	if strings.Contains(src, "\\\r") {
		// The parser drops a backslash-CR before a newline inside $(...);
		// bash runs it as a command named CR.
		a.always("always.parse", []string{firstLine(src)}, "a backslash before a carriage return is read differently by the analysis and by bash; remove the carriage return")
		return
	}
	hasHash := strings.Contains(src, "#")
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(hasHash)).Parse(strings.NewReader(src), "")
	if err != nil {
		a.always("always.parse", []string{firstLine(src)}, "the script does not parse as bash: "+err.Error())
		return
	}
	if hasHash && midWordComment(f, src) {
		a.always("always.parse", []string{firstLine(src)}, "a # inside a word would be read as a comment by the analysis but not by bash; add a space before it or quote it")
		return
	}
	saved := a.src
	a.src = src
	a.stmts(f.Stmts, d, stdinInfo{})
	a.src = saved
}

// parenDepth is a cheap upper bound of the nesting of '(' in src, skipping
// single-quoted text and escaped characters. The parser is slow on very
// deep nesting, so it runs only below a bound.
func parenDepth(src string) int {
	depth, max := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '\'':
			if j := strings.IndexByte(src[i+1:], '\''); j >= 0 {
				i += j + 1
			}
		case '(':
			depth++
			if depth > max {
				max = depth
			}
		case ')':
			if depth > 0 {
				depth--
			}
		}
	}
	return max
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func (a *analyser) stmts(list []*syntax.Stmt, d int, in stdinInfo) {
	for _, s := range list {
		if a.stopped {
			return
		}
		a.stmt(s, d, in)
	}
}

func (a *analyser) stmt(s *syntax.Stmt, d int, in stdinInfo) {
	if d > maxDepth {
		a.limit("limits.depth", "the script nests commands more than 64 deep")
		return
	}
	// Lists and pipelines are walked without recursion: a chain of
	// thousands of "a && b && ..." must not grow the stack.
	type item struct {
		s  *syntax.Stmt
		in stdinInfo
	}
	stack := []item{{s, in}}
	for len(stack) > 0 && !a.stopped {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if b, ok := it.s.Cmd.(*syntax.BinaryCmd); ok && len(it.s.Redirs) == 0 {
			yin := it.in
			if b.Op == syntax.Pipe || b.Op == syntax.PipeAll {
				yin = stdinInfo{kind: stdinPipe}
			}
			stack = append(stack, item{b.Y, yin}, item{b.X, it.in})
			continue
		}
		a.leaf(it.s, d, it.in)
	}
}

func (a *analyser) leaf(s *syntax.Stmt, d int, in stdinInfo) {
	for _, r := range s.Redirs {
		if info, ok := a.redirect(r, d); ok {
			in = info
		}
	}
	if s.Cmd != nil && !a.stopped {
		a.command(s.Cmd, d, in)
	}
}

func (a *analyser) command(c syntax.Command, d int, in stdinInfo) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		a.call(c, d, in)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			a.stmts(ic.Cond, d+1, in)
			a.stmts(ic.Then, d+1, in)
		}
	case *syntax.WhileClause:
		a.stmts(c.Cond, d+1, in)
		a.stmts(c.Do, d+1, in)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			if l.Name != nil && a.protected(l.Name.Value) {
				a.always("always.assign", []string{"for " + l.Name.Value}, a.assignWhy(l.Name.Value))
			}
			for _, w := range l.Items {
				a.word(w, d)
			}
		case *syntax.CStyleLoop:
			for _, x := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
				if x != nil {
					a.arith(x, d)
				}
			}
		}
		a.stmts(c.Do, d+1, in)
	case *syntax.CaseClause:
		a.word(c.Word, d)
		for _, it := range c.Items {
			for _, w := range it.Patterns {
				a.word(w, d)
			}
			a.stmts(it.Stmts, d+1, in)
		}
	case *syntax.Block:
		a.stmts(c.Stmts, d+1, in)
	case *syntax.Subshell:
		a.stmts(c.Stmts, d+1, in)
	case *syntax.BinaryCmd:
		a.stmt(&syntax.Stmt{Cmd: c}, d+1, in)
	case *syntax.FuncDecl:
		name := "?"
		if c.Name != nil {
			name = c.Name.Value
		}
		a.always("always.function", []string{name + "()"}, "function definitions are always denied: a function can stand in for any command")
		if c.Body != nil {
			a.stmt(c.Body, d+1, in)
		}
	case *syntax.ArithmCmd:
		a.arith(c.X, d)
	case *syntax.TestClause:
		a.test(c.X, d, 0)
	case *syntax.DeclClause:
		a.decl(c, d)
	case *syntax.LetClause:
		cl := &cmdline{words: []word{staticWord("let")}}
		for _, x := range c.Exprs {
			cl.words = append(cl.words, word{text: a.source(x), kind: wDynamic})
			a.arith(x, d)
		}
		a.rulePart(cl)
	case *syntax.TimeClause:
		cl := &cmdline{words: []word{staticWord("time")}}
		if c.PosixFormat {
			cl.words = append(cl.words, staticWord("-p"))
		}
		a.rulePart(cl)
		if c.Stmt != nil {
			a.stmt(c.Stmt, d+1, in)
		}
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, d+1, in)
	default:
		a.always("always.parse", []string{a.source(c)}, "unsupported shell construct")
	}
}

// test walks a [[ ]] expression. Arithmetic comparisons evaluate their
// operands as arithmetic, and -v evaluates an array subscript.
func (a *analyser) test(x syntax.TestExpr, d, depth int) {
	if depth > maxArithDepth {
		a.limit("limits.depth", "the [[ ]] expression nests too deep")
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, y := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := y.(*syntax.Word); !ok || !isArithNumber(w.Lit()) {
					a.dynamic([]string{a.source(x)}, "[[ ]] arithmetic comparison evaluates its operands as code")
					break
				}
			}
		}
		a.test(x.X, d, depth+1)
		a.test(x.Y, d, depth+1)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if w, ok := x.X.(*syntax.Word); ok && strings.ContainsAny(a.source(w), "[$`") {
				a.dynamic([]string{a.source(x)}, "[[ -v ]] evaluates an array subscript as code")
			}
		}
		a.test(x.X, d, depth+1)
	case *syntax.ParenTest:
		a.test(x.X, d, depth+1)
	case *syntax.Word:
		a.word(x, d)
	}
}

// arith checks an arithmetic expression: reading a variable (or any
// expansion) is commands.dynamic, since bash evaluates the value as an
// expression, and a[$(cmd)] in it runs cmd.
func (a *analyser) arith(x syntax.ArithmExpr, d int) {
	reads := false
	var visit func(x syntax.ArithmExpr, depth int)
	visit = func(x syntax.ArithmExpr, depth int) {
		if a.stopped {
			return
		}
		if depth > maxArithDepth {
			a.limit("limits.depth", "the arithmetic expression nests too deep")
			return
		}
		switch x := x.(type) {
		case *syntax.BinaryArithm:
			if isArithAssign(x.Op) {
				if w, ok := x.X.(*syntax.Word); ok && isName(w.Lit()) {
					name := w.Lit()
					if a.protected(name) {
						a.always("always.assign", []string{a.source(x)}, a.assignWhy(name))
					}
					if x.Op != syntax.Assgn {
						reads = true
					}
					visit(x.Y, depth+1)
					return
				}
			}
			visit(x.X, depth+1)
			visit(x.Y, depth+1)
		case *syntax.UnaryArithm:
			visit(x.X, depth+1)
		case *syntax.ParenArithm:
			visit(x.X, depth+1)
		case *syntax.FlagsArithm:
			visit(x.X, depth+1)
		case *syntax.Word:
			if isArithNumber(x.Lit()) {
				return
			}
			reads = true
			for _, p := range x.Parts {
				a.wordPart(p, d)
			}
		}
	}
	visit(x, 0)
	if reads && !a.stopped {
		a.dynamic([]string{a.source(x)}, "arithmetic reads a variable or expansion; bash evaluates its value as code")
	}
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}

// isArithNumber reports whether s is an integer constant of bash
// arithmetic: 42, 0x2a, 052, 2#101010, 64#_z.
func isArithNumber(s string) bool {
	if s == "" {
		return false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return h != "" && strings.Trim(h, "0123456789abcdef") == ""
	}
	base, digits, hasBase := strings.Cut(s, "#")
	if base == "" || strings.Trim(base, "0123456789") != "" {
		return false
	}
	if !hasBase {
		return true
	}
	if digits == "" {
		return false
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '@' || c == '_') {
			return false
		}
	}
	return true
}

func assignWhy(name string) string {
	return "assigning " + name + " can change which program runs or what the shell executes"
}

// midWordComment reports a comment that does not start a word. bash reads
// "#" as a comment only at the start of a word; the parser sometimes takes
// it for one after an expansion (as in "( ls $a#; rm x )"), which would
// hide commands from the analysis.
func midWordComment(f *syntax.File, src string) bool {
	bad := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok && !bad {
			off := c.Hash.Offset()
			if off > 0 && off <= uint(len(src)) && strings.IndexByte(" \t\n;&|()<>`", src[off-1]) < 0 {
				bad = true
			}
		}
		return !bad
	})
	return bad
}
