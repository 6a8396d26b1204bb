package policy

import (
	"path"
	"sort"
	"strconv"
	"strings"
)

// generaliseCommands turns observed argvs into allow rules, program by
// program, as specific as the observations allow in a prefix rule
// language: words shared by every observation of a group are kept; where
// they differ, words of the same extension seen at least twice become one
// glob (tests/test_a.py, tests/test_b.py: tests/test_*.py); any other
// difference splits the group (git status, git diff: two rules, never
// "git"). Arguments that are plain numbers become '*'. A command observed
// with no further words is its own rule.
func generaliseCommands(o *obs) []SuggestedRule {
	var all [][]string
	orig := map[string][]string{} // normalised argv -> the observed ones
	for k, a := range o.argvs {
		n := numbersAsGlobs(a)
		nk := strings.Join(n, "\x00")
		if _, ok := orig[nk]; !ok {
			all = append(all, n)
		}
		orig[nk] = append(orig[nk], k)
	}
	var out []SuggestedRule
	generalise(nil, all, func(words []string, members [][]string) {
		var src []string
		for _, m := range members {
			for _, k := range orig[strings.Join(m, "\x00")] {
				for _, s := range o.sources[k] {
					src = appendNew(src, s)
				}
			}
		}
		sortSources(src)
		out = append(out, SuggestedRule{Match: ruleText(words), Sources: src})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Match < out[j].Match })
	return dedupeRules(out)
}

func dedupeRules(rs []SuggestedRule) []SuggestedRule {
	var out []SuggestedRule
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Match == r.Match {
			for _, s := range r.Sources {
				out[n-1].Sources = appendNew(out[n-1].Sources, s)
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// maxRuleWords bounds how long a suggested rule grows.
const maxRuleWords = 6

func generalise(prefix []string, argvs [][]string, emit func([]string, [][]string)) {
	k := len(prefix)
	if len(argvs) == 0 {
		return
	}
	for _, a := range argvs {
		if len(a) == k || k >= maxRuleWords {
			emit(prefix, argvs)
			return
		}
	}
	byWord := map[string][][]string{}
	for _, a := range argvs {
		byWord[a[k]] = append(byWord[a[k]], a)
	}
	words := make([]string, 0, len(byWord))
	for w := range byWord {
		words = append(words, w)
	}
	sort.Strings(words)
	if len(words) == 1 {
		generalise(append(prefix[:k:k], words[0]), argvs, emit)
		return
	}
	used := map[string]bool{}
	if k > 0 {
		byExt := map[string][]string{}
		for _, w := range words {
			if e := path.Ext(w); e != "" && e != w && !strings.HasPrefix(w, "-") && !strings.ContainsAny(e, "*") {
				byExt[e] = append(byExt[e], w)
			}
		}
		for _, ws := range byExt {
			if len(ws) < 2 {
				continue
			}
			var members [][]string
			for _, w := range ws {
				used[w] = true
				members = append(members, byWord[w]...)
			}
			emit(append(prefix[:k:k], globOf(ws)), members)
		}
	}
	for _, w := range words {
		if !used[w] {
			generalise(append(prefix[:k:k], w), byWord[w], emit)
		}
	}
}

// numbersAsGlobs replaces the arguments that are plain numbers (counts,
// sizes, ports: data, not intent) by '*'.
func numbersAsGlobs(argv []string) []string {
	out := append([]string(nil), argv...)
	for i := 1; i < len(out); i++ {
		if out[i] != "" && strings.Trim(out[i], "0123456789") == "" {
			out[i] = "*"
		}
	}
	return out
}

// globOf is the narrowest P*S word matching every word of ws (they share
// an extension, so S is at least it).
func globOf(ws []string) string {
	p, s := ws[0], ws[0]
	for _, w := range ws[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
		for !strings.HasSuffix(w, s) {
			s = s[1:]
		}
	}
	for _, w := range ws {
		if len(p)+len(s) > len(w) {
			// prefix and suffix overlap in the shortest word
			p = p[:max(0, len(w)-len(s))]
		}
	}
	return p + "*" + s
}

// ruleText writes rule words so that parseRuleWords reads them back:
// characters other than plain ones are escaped with a backslash ('*'
// stays a glob).
func ruleText(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		for j := 0; j < len(w); j++ {
			c := w[j]
			if !plainRuneByte(c) {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		if w == "" {
			b.WriteString("''")
		}
		out[i] = b.String()
	}
	return strings.Join(out, " ")
}

func plainRuneByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 ||
		strings.IndexByte("-_./=:,+@%^*~", c) >= 0
}

// collapseFiles turns observed paths into globs by directory: two or more
// files of one directory with the same extension become dir/*.ext; any
// other file stays its own path.
func collapseFiles(o *obs) []SuggestedRule {
	byDir := map[string][]string{}
	venvs := map[string]bool{} // directories holding a pyvenv.cfg
	for _, a := range o.argvs {
		if path.Base(a[0]) == "pyvenv.cfg" {
			venvs[path.Dir(a[0])] = true
		}
	}
	trees := map[string][]string{} // generated tree -> its sources
	for _, a := range o.argvs {
		p := a[0]
		if root := generatedRoot(p, venvs); root != "" {
			for _, x := range o.sources[p] {
				trees[root] = appendNew(trees[root], x)
			}
			continue
		}
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], p)
	}
	var out []SuggestedRule
	for root, src := range trees {
		sortSources(src)
		out = append(out, SuggestedRule{Match: escapeGlob(root) + "/**", Sources: src})
	}
	for dir, ps := range byDir {
		sort.Strings(ps)
		srcs := func(paths []string) []string {
			var s []string
			for _, p := range paths {
				for _, x := range o.sources[p] {
					s = appendNew(s, x)
				}
			}
			sortSources(s)
			return s
		}
		byExt := map[string][]string{}
		for _, p := range ps {
			e := path.Ext(p)
			if e == path.Base(p) || strings.ContainsAny(e, `*?[]{}\`) {
				e = ""
			}
			byExt[e] = append(byExt[e], p)
		}
		for ext, group := range byExt {
			if ext == "" || len(group) < 2 {
				for _, p := range group {
					out = append(out, SuggestedRule{Match: escapeGlob(p), Sources: srcs([]string{p})})
				}
				continue
			}
			g := escapeGlob(dir) + "/*" + ext
			switch dir {
			case ".":
				g = "*" + ext
			case "/":
				g = "/*" + ext
			}
			out = append(out, SuggestedRule{Match: g, Sources: srcs(group)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Match < out[j].Match })
	return out
}

// generatedTree names directories whose contents tools generate in bulk:
// a suggestion allows each as one glob, not file by file.
var generatedTree = map[string]bool{"node_modules": true, "__pycache__": true, ".venv": true, "venv": true}

// generatedRoot is the generated tree p lies in ("" when none): the
// outermost of .git/objects, a virtual environment (a directory named
// .venv or venv, or one holding a pyvenv.cfg), node_modules and
// __pycache__.
func generatedRoot(p string, venvs map[string]bool) string {
	segs := strings.Split(p, "/")
	for i := 0; i < len(segs)-1; i++ {
		dir := strings.Join(segs[:i+1], "/")
		switch {
		case segs[i] == "" || segs[i] == ".":
		case segs[i] == ".git" && segs[i+1] == "objects" && i+2 < len(segs):
			return dir + "/objects"
		case generatedTree[segs[i]] || venvs[dir]:
			return dir
		}
	}
	return ""
}

// escapeGlob escapes the doublestar metacharacters of a literal path.
func escapeGlob(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(`*?[]{}\`, p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// exact keeps every observation as its own rule.
func exact(o *obs) []SuggestedRule {
	var out []SuggestedRule
	for k, a := range o.argvs {
		s := append([]string(nil), o.sources[k]...)
		sortSources(s)
		out = append(out, SuggestedRule{Match: a[0], Sources: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Match < out[j].Match })
	return out
}

// sortSources orders "file:line" sources by file, then line number.
func sortSources(s []string) {
	sort.Slice(s, func(i, j int) bool {
		fi, li := splitSource(s[i])
		fj, lj := splitSource(s[j])
		if fi != fj {
			return fi < fj
		}
		return li < lj
	})
}

func splitSource(s string) (string, int) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return s, 0
	}
	return s[:i], n
}
