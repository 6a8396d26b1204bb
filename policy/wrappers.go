package policy

import (
	"strings"
)

// optSpec describes the options of a wrapper command, so that the wrapped
// command can be found after them.
type optSpec struct {
	noArg, withArg, optArg string   // short flags: without, with, and with an attached-only argument
	longNoArg, longArg     []string // long options (without the leading --)
	dyn                    string   // short flags that make the wrapped command unknowable
	longDyn                []string
	positional             int // arguments between the options and the command (timeout DURATION)
}

var wrappers = map[string]optSpec{
	"env": {noArg: "i0v", withArg: "uC", dyn: "SP",
		longNoArg: []string{"ignore-environment", "null", "debug"},
		longArg:   []string{"unset", "chdir"}, longDyn: []string{"split-string"}},
	"nice":    {noArg: "0123456789", withArg: "n", longArg: []string{"adjustment"}},
	"nohup":   {},
	"timeout": {noArg: "v", withArg: "sk", longNoArg: []string{"preserve-status", "foreground", "verbose"}, longArg: []string{"signal", "kill-after"}, positional: 1},
	"stdbuf":  {withArg: "ioe", longArg: []string{"input", "output", "error"}},
	"time":    {noArg: "pvaq", withArg: "fo", longNoArg: []string{"verbose", "portability", "append", "quiet"}, longArg: []string{"format", "output"}},
	"command": {noArg: "pvV"},
	"builtin": {},
	"exec":    {noArg: "cl", withArg: "a"},
	"setsid":  {noArg: "cfw", longNoArg: []string{"ctty", "fork", "wait"}},
	"ionice":  {noArg: "t", withArg: "cn", longArg: []string{"class", "classdata"}},
	"sudo": {noArg: "AbEHiKklnPSsV", withArg: "CDghprtTUu",
		longNoArg: []string{"askpass", "background", "preserve-env", "set-home", "login", "non-interactive", "stdin", "shell"},
		longArg:   []string{"close-from", "chdir", "group", "host", "prompt", "role", "type", "command-timeout", "other-user", "user"}},
	"doas": {noArg: "ns", withArg: "uC"},
	"xargs": {noArg: "0prtxo", withArg: "adEILnPs", optArg: "eil",
		longNoArg: []string{"null", "no-run-if-empty", "interactive", "verbose", "exit", "open-tty", "show-limits"},
		longArg:   []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}},
}

// parseOpts skips the options of a wrapper. It returns the index of the
// first argument after them, any -I/--replace string, and a note when the
// options cannot be understood statically.
func parseOpts(args []word, spec optSpec) (next int, repl string, bad string) {
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if w.kind != wStatic {
			if strings.HasPrefix(w.prefix, "-") || w.kind == wGlob && strings.HasPrefix(w.text, "-") {
				return i, "", "option known only at run time"
			}
			return i, "", ""
		}
		s := w.text
		if s == "--" {
			return i + 1, repl, ""
		}
		if len(s) < 2 || s[0] != '-' {
			return i, repl, ""
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasVal := strings.Cut(s[2:], "=")
			switch {
			case contains(spec.longDyn, name):
				return i, "", "option " + s + " builds the command at run time"
			case contains(spec.longNoArg, name):
			case contains(spec.longArg, name):
				if !hasVal {
					i++
					if i < len(args) {
						val = args[i].text
					}
				}
				if name == "replace" {
					repl = val
				}
				if name == "process-slot-var" && protectedVar(val) {
					return i, "", "assigns " + val
				}
			case name == "replace":
				repl = "{}"
			default:
				return i, "", "unknown option " + s
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			c := s[j]
			switch {
			case strings.IndexByte(spec.dyn, c) >= 0:
				return i, "", "option -" + string(c) + " builds the command at run time"
			case strings.IndexByte(spec.noArg, c) >= 0:
				continue
			case strings.IndexByte(spec.optArg, c) >= 0:
				if c == 'i' {
					repl = "{}"
					if j+1 < len(s) {
						repl = s[j+1:]
					}
				}
			case strings.IndexByte(spec.withArg, c) >= 0:
				val := s[j+1:]
				if val == "" {
					i++
					if i < len(args) {
						val = args[i].text
					}
				}
				if c == 'I' {
					repl = val
				}
			default:
				return i, "", "unknown option -" + string(c)
			}
			break
		}
	}
	return i, repl, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unwrap analyses the command a wrapper runs.
func (a *analyser) unwrap(base string, cl *cmdline, d int, in stdinInfo, wd int) {
	args := cl.words[1:]
	if a.argvMode {
		switch base {
		case "bash", "sh", "dash", "ash", "ksh", "mksh", "rbash", "zsh", "eval", "watch":
			return // what they run is judged when it is executed
		}
	}
	switch base {
	case "bash", "sh", "dash", "ash", "ksh", "mksh", "rbash", "zsh":
		a.shell(base, cl, d, in)
		return
	case "eval":
		if len(args) == 0 && !cl.open {
			return
		}
		vals, ok := allStatic(args)
		if !ok || cl.open {
			a.dynamic(cl.argv(), "eval of a string known only at run time")
			return
		}
		a.nested(strings.Join(vals, " "), d)
		return
	case "find":
		a.find(cl, d, wd)
		return
	case "busybox":
		if len(args) > 0 && !strings.HasPrefix(args[0].text, "-") {
			a.simple(&cmdline{words: args, open: cl.open}, d, in, wd+1)
		} else if len(args) == 0 && cl.open {
			a.dynamic(cl.argv(), "the applet comes from input at run time")
		}
		return
	case "watch":
		a.watch(cl, d)
		return
	}
	spec, ok := wrappers[base]
	if !ok {
		return
	}
	next, repl, bad := parseOpts(args, spec)
	if bad != "" {
		a.dynamic(cl.argv(), base+": "+bad+"; cannot tell which command it runs")
		return
	}
	next += spec.positional
	if base == "env" {
		for next < len(args) {
			w := args[next]
			lit := w.text
			if w.kind == wDynamic {
				lit = w.prefix
			}
			name, _, hasEq := strings.Cut(lit, "=")
			if !hasEq || name == "" {
				break
			}
			if a.protected(name) {
				a.always("always.assign", cl.argv(), a.assignWhy(name))
			}
			next++
		}
	}
	inner := &cmdline{open: cl.open}
	if next < len(args) {
		inner.words = args[next:]
	}
	if base == "xargs" {
		inner.open = true
		if len(inner.words) == 0 {
			if cl.open {
				a.dynamic(cl.argv(), "the command comes from input at run time")
				return
			}
			inner.words = []word{staticWord("echo")}
		}
		if repl != "" {
			inner.words = replaceWords(inner.words, repl)
		}
	}
	if len(inner.words) == 0 {
		if cl.open {
			a.dynamic(cl.argv(), "the command comes from input at run time")
		}
		return
	}
	if base == "env" {
		if dir, ok := envChdir(args[:min(next, len(args))]); ok {
			a.inDir(dir, func() { a.simple(inner, d, in, wd+1) })
			return
		}
	}
	a.simple(inner, d, in, wd+1)
}

// envChdir finds env's -C DIR / --chdir=DIR; dir is nil when it is not a
// single word.
func envChdir(opts []word) (*word, bool) {
	for i := 0; i < len(opts); i++ {
		s := opts[i].text
		switch {
		case s == "-C" || s == "--chdir":
			if i+1 < len(opts) {
				return &opts[i+1], true
			}
			return nil, true
		case strings.HasPrefix(s, "--chdir="):
			w := staticWord(s[len("--chdir="):])
			return &w, true
		case len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s, 'C') > 0:
			if rest := s[strings.IndexByte(s, 'C')+1:]; rest != "" {
				w := staticWord(rest)
				return &w, true
			}
			if i+1 < len(opts) {
				return &opts[i+1], true
			}
			return nil, true
		}
	}
	return nil, false
}

// replaceWords turns every word holding the placeholder (xargs -I,
// find -exec {}) into a word known only at run time.
func replaceWords(ws []word, repl string) []word {
	out := make([]word, len(ws))
	for i, w := range ws {
		out[i] = w
		if w.kind == wStatic && strings.Contains(w.text, repl) {
			j := strings.Index(w.text, repl)
			k := strings.LastIndex(w.text, repl)
			out[i] = word{text: w.text, kind: wDynamic, prefix: w.text[:j], suffix: w.text[k+len(repl):]}
		}
	}
	return out
}

// shell analyses bash/sh -c LITERAL, and a shell reading its script from
// stdin (literal heredocs and here-strings are analysed).
func (a *analyser) shell(base string, cl *cmdline, d int, in stdinInfo) {
	args := cl.words[1:]
	cmdMode, stdinMode := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		w := args[i]
		if w.kind != wStatic {
			if strings.HasPrefix(w.prefix, "-") || strings.HasPrefix(w.prefix, "+") || w.prefix == "" && w.kind == wDynamic && !cmdMode {
				a.dynamic(cl.argv(), "shell arguments known only at run time")
				return
			}
			break
		}
		s := w.text
		switch {
		case s == "--" || s == "-":
			i++
			break loop
		case s == "--rcfile" || s == "--init-file":
			a.dynamic(cl.argv(), "the shell reads startup commands from a file")
			return
		case strings.HasPrefix(s, "--"):
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			var next *word
			if i+1 < len(args) {
				next = &args[i+1]
			}
			if shellFlagsKeyword(s, next) {
				a.always("always.keyword", cl.argv(), keywordWhy)
				return
			}
			flags := s[1:]
			if s[0] == '-' && strings.IndexByte(flags, 'c') >= 0 {
				cmdMode = true
			}
			if s[0] == '-' && strings.IndexByte(flags, 's') >= 0 {
				stdinMode = true
			}
			if strings.ContainsAny(flags, "oO") {
				i++
			}
		default:
			break loop
		}
	}
	rest := args[min(i, len(args)):]
	if cmdMode {
		if len(rest) == 0 {
			if cl.open {
				a.dynamic(cl.argv(), "the script comes from input at run time")
			}
			return
		}
		if rest[0].kind != wStatic {
			a.dynamic(cl.argv(), base+" -c with a script known only at run time")
			return
		}
		if base == "zsh" {
			a.dynamic(cl.argv(), "zsh scripts are not analysed")
			return
		}
		a.nested(rest[0].text, d)
		return
	}
	if len(rest) > 0 && !stdinMode {
		if rest[0].kind == wStatic && scriptFile(rest[0].text) {
			stdinMode = true // bash /dev/stdin <<< '...': the script is stdin
		} else {
			if !a.p.cmd.allowsExplicitly(cl) {
				a.dynamic(cl.argv(), base+" runs a script file the analysis cannot see; allow it with a rule that names the script (like \""+base+" scripts/*.sh\")")
			}
			return
		}
	}
	if cl.open {
		a.dynamic(cl.argv(), "the script comes from input at run time")
		return
	}
	switch {
	case in.kind == stdinLiteral && in.static && base != "zsh":
		a.nested(in.text, d)
	case in.kind == stdinLiteral:
		a.dynamic(cl.argv(), "shell reads its script from a heredoc with expansions")
	case in.kind == stdinPipe:
		a.dynamic(cl.argv(), "shell reads its script from a pipe")
	case in.kind == stdinOther:
		a.dynamic(cl.argv(), "shell reads its script from a file")
	default:
		a.dynamic(cl.argv(), "shell reads its script from stdin")
	}
}

// find analyses the commands of -exec, -execdir, -ok and -okdir.
func (a *analyser) find(cl *cmdline, d int, wd int) {
	a.findActions(cl, d, wd)
	ws := cl.words
	for i := 1; i < len(ws); i++ {
		switch ws[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		inner := &cmdline{}
		j := i + 1
		for ; j < len(ws); j++ {
			t := ws[j].text
			if ws[j].kind == wStatic && t == ";" {
				break
			}
			if ws[j].kind == wStatic && t == "+" && j > i+1 && ws[j-1].text == "{}" {
				inner.open = true
				break
			}
			inner.words = append(inner.words, ws[j])
		}
		inner.words = replaceWords(inner.words, "{}")
		if cl.open {
			inner.open = true
		}
		if t := ws[i].text; t == "-execdir" || t == "-okdir" {
			a.inDir(nil, func() { a.simple(inner, d, stdinInfo{kind: stdinOther}, wd+1) })
		} else {
			a.simple(inner, d, stdinInfo{kind: stdinOther}, wd+1)
		}
		i = j
	}
}

// watch runs its arguments joined by spaces with sh -c (or directly with -x).
func (a *analyser) watch(cl *cmdline, d int) {
	spec := optSpec{noArg: "bcdegtprwx", withArg: "nq",
		longNoArg: []string{"beep", "color", "differences", "errexit", "chgexit", "no-title", "precise", "no-wrap", "exec"},
		longArg:   []string{"interval", "equexit"}}
	args := cl.words[1:]
	next, _, bad := parseOpts(args, spec)
	if bad != "" {
		a.dynamic(cl.argv(), "watch: "+bad+"; cannot tell which command it runs")
		return
	}
	if next >= len(args) {
		return
	}
	vals, ok := allStatic(args[next:])
	if !ok {
		a.dynamic(cl.argv(), "watch runs a command known only at run time")
		return
	}
	a.nested(strings.Join(vals, " "), d)
}
