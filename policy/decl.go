package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// decl analyses declare, local, export, readonly, typeset and nameref.
func (a *analyser) decl(c *syntax.DeclClause, d int) {
	variant := "declare"
	if c.Variant != nil {
		variant = c.Variant.Value
	}
	cl := &cmdline{words: []word{staticWord(variant)}}
	nameref, integer := variant == "nameref", false
	for _, as := range c.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			w := a.word(as.Value, d)
			cl.words = append(cl.words, w)
			if w.kind != wStatic {
				a.dynamic([]string{variant, w.text}, "declaration of a variable named only at run time")
				continue
			}
			s := w.text
			if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
				if s[0] == '-' {
					nameref = nameref || strings.Contains(s, "n")
					integer = integer || strings.Contains(s, "i")
				}
				continue
			}
			if integer {
				if n, _, _ := strings.Cut(s, "="); isName(n) {
					a.markInt(n)
				}
			}
			a.assignText([]string{variant, s}, s, nameref, d)
			continue
		}
		if as.Name == nil {
			continue
		}
		name := as.Name.Value
		if integer {
			a.markInt(name)
		}
		text := name
		kind := wStatic
		var val word
		if as.Index != nil {
			a.index(as.Index, d)
			text = a.source(as)
		}
		if as.Value != nil {
			val = a.word(as.Value, d)
			text = name + "=" + val.text
			if as.Append {
				text = name + "+=" + val.text
			}
			kind = val.kind
		}
		if as.Array != nil {
			a.assign(&syntax.Assign{Array: as.Array}, d, nil)
			text = a.source(as)
			kind = wDynamic
		}
		cl.words = append(cl.words, word{text: text, kind: kind})
		argv := []string{variant, text}
		if a.protected(name) && (!as.Naked || nameref || (variant != "export" && variant != "readonly")) {
			a.always("always.assign", argv, a.assignWhy(name))
		}
		if nameref && as.Array == nil {
			a.refTarget(argv, name, val, as.Value != nil)
		}
		if integer && as.Value != nil && !(val.kind == wStatic && isArithNumber(val.text)) {
			if val.kind == wStatic {
				a.codeIn(val.text, d)
			}
			a.dynamic(argv, "an integer variable evaluates its value as arithmetic")
		}
		if integer && as.Array != nil {
			for _, e := range as.Array.Elems {
				a.intAssign(argv, name, e.Value, d)
			}
		}
	}
	a.rulePart(cl)
}
