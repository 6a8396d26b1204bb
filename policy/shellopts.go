package policy

import "strings"

// keywordWhy explains always.keyword: with bash's keyword option (set -k,
// set -o keyword, bash -k) every NAME=value word anywhere on a command line
// becomes an environment assignment of that command, so an argument such
// as LD_PRELOAD=./x.so or GIT_EXTERNAL_DIFF=./x is not seen as one.
const keywordWhy = "the keyword option (-k) turns NAME=value arguments into environment assignments the analysis cannot see"

// shellOpts checks set and shopt for the keyword option.
func (a *analyser) shellOpts(base string, cl *cmdline) {
	args := cl.words[1:]
	switch base {
	case "set":
		skip := -1
		for i, w := range args {
			if i == skip {
				continue
			}
			if w.kind != wStatic {
				if strings.HasPrefix(w.prefix, "-") || w.prefix == "" {
					a.dynamic(cl.argv(), "set with options known only at run time (set -k changes how every later command line is read)")
				}
				return
			}
			if w.text == "--" || w.text == "-" || len(w.text) < 2 || w.text[0] != '-' && w.text[0] != '+' {
				return
			}
			if w.text[0] == '-' && strings.IndexByte(w.text[1:], 'k') >= 0 {
				a.always("always.keyword", cl.argv(), keywordWhy)
				return
			}
			if strings.IndexByte(w.text[1:], 'o') >= 0 && i+1 < len(args) {
				if w.text[0] == '-' && optKeyword(args[i+1]) {
					a.always("always.keyword", cl.argv(), keywordWhy)
					return
				}
				skip = i + 1
			}
		}
	case "shopt":
		o := false
		for _, w := range args {
			switch {
			case w.kind == wStatic && strings.HasPrefix(w.text, "-"):
				o = o || strings.Contains(w.text, "o")
			case optKeyword(w) && o:
				a.always("always.keyword", cl.argv(), keywordWhy)
				return
			case w.kind != wStatic:
				a.dynamic(cl.argv(), "shopt with options known only at run time")
				return
			}
		}
	}
}

// optKeyword reports whether the word may name the keyword option.
func optKeyword(w word) bool {
	if w.kind != wStatic {
		return true
	}
	return w.text == "keyword"
}

// shellFlagsKeyword reports whether one option word of bash/sh turns on
// the keyword option; next is the word after it (for -o keyword).
func shellFlagsKeyword(s string, next *word) bool {
	if len(s) < 2 || s[0] != '-' || strings.HasPrefix(s, "--") {
		return false
	}
	if strings.IndexByte(s[1:], 'k') >= 0 {
		return true
	}
	return strings.IndexByte(s[1:], 'o') >= 0 && next != nil && optKeyword(*next)
}

// scriptFile reports whether a shell's script file argument is its own
// standard input (bash /dev/stdin, sh /proc/self/fd/0), which a literal
// heredoc or here-string may supply.
func scriptFile(s string) bool {
	switch s {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0":
		return true
	}
	return false
}

// allowsExplicitly reports whether an allow rule that names more than the
// program itself (such as "bash scripts/*.sh") certainly matches the
// command line: running a script file needs such a rule.
func (c *commandRules) allowsExplicitly(cl *cmdline) bool {
	for _, r := range c.lists[Allow] {
		if len(r.words) > 1 && r.matches(cl, false) {
			return true
		}
	}
	return false
}
