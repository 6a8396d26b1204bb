package policy

import "strings"

// findActions checks find's actions other than -exec: -fprint, -fprint0,
// -fprintf and -fls write a file; -delete removes what it finds under the
// start points, and is decided as rm -rf of them when no test narrows it,
// as rm -f of files under them otherwise (so a policy that denies rm, or
// files.write, refuses it).
func (a *analyser) findActions(cl *cmdline, d int, wd int) {
	ws := cl.words
	var starts []word
	i := 1
	for ; i < len(ws); i++ { // options -H -L -P -D x -Olevel, then start points
		s := ws[i].text
		if ws[i].kind == wStatic && (s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O")) {
			continue
		}
		if ws[i].kind == wStatic && s == "-D" {
			i++
			continue
		}
		break
	}
	for ; i < len(ws); i++ {
		s := ws[i].text
		if ws[i].kind == wStatic && (strings.HasPrefix(s, "-") || s == "(" || s == "!" || s == ")") {
			break
		}
		starts = append(starts, ws[i])
	}
	var targets []fileTarget
	del, filtered := false, false
	for ; i < len(ws); i++ {
		if ws[i].kind != wStatic {
			filtered = true
			continue
		}
		switch ws[i].text {
		case "-delete", "-depth", "-d", "-xdev", "-mount", "-print", "-ignore_readdir_race", "-noleaf":
		case "-maxdepth", "-mindepth":
			i++
		default:
			filtered = true
		}
		switch ws[i].text {
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(ws) {
				targets = append(targets, fileTarget{w: ws[i+1], role: roleWrite, opt: ws[i].text})
				i++
			}
		case "-delete":
			del = true
		case "-exec", "-execdir", "-ok", "-okdir":
			for i++; i < len(ws) && !(ws[i].kind == wStatic && (ws[i].text == ";" || ws[i].text == "+")); i++ {
			}
		}
	}
	a.checkFiles("find", cl, targets)
	if !del {
		return
	}
	if len(starts) == 0 {
		starts = []word{staticWord(".")}
	}
	// Without tests, find -delete removes everything under its start
	// points; with them, some files under them.
	rm := &cmdline{words: append([]word{staticWord("rm"), staticWord("-rf")}, starts...), open: cl.open}
	if filtered {
		rm.words = []word{staticWord("rm"), staticWord("-f")}
		for _, s := range starts {
			s.text += "/(found)"
			rm.words = append(rm.words, s)
		}
	}
	n := len(a.parts)
	a.simple(rm, d, stdinInfo{}, wd+1)
	for j := n; j < len(a.parts); j++ {
		a.parts[j].Argv = append(append([]string(nil), a.parts[j].Argv...), "(find -delete)")
		if a.parts[j].Note == "" {
			a.parts[j].Note = "find -delete removes what it finds, like rm -rf of its start points"
		}
	}
}
