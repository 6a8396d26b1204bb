package policy

import "strings"

// A name reference (declare/local/typeset -n, nameref) writes the variable
// it names: `declare -n r=PATH; r=/tmp` assigns PATH. A reference to a
// protected variable is treated as an assignment to it (always denied).
// A reference declared without a target (`declare -n r`) takes as its
// target whatever is assigned to it next (`r=PATH`, `read r`, `printf -v
// r`, `for r in PATH`, ${r:=PATH}), or the value r already held: its
// target is known only at run time (commands.dynamic), and every later
// assignment to it, or to a reference that leads to it, is treated as an
// assignment to a protected variable.

// maxRefChain bounds the references followed from one name (bash's own
// limit is 8); a longer or circular chain counts as protected.
const maxRefChain = 16

// protected reports whether assigning name is always denied: a protected
// variable, or a name reference that leads to one or to a reference whose
// target is not known.
func (a *analyser) protected(name string) bool {
	for range maxRefChain {
		if protectedVar(name) {
			return true
		}
		target, ok := a.refs[name]
		switch {
		case !ok:
			return false
		case target == "":
			return true
		}
		name = target
	}
	return true
}

// assignWhy says why assigning name is denied.
func (a *analyser) assignWhy(name string) string {
	if _, ref := a.refs[name]; ref && !protectedVar(name) {
		return name + " is a name reference that may lead to PATH, LD_PRELOAD or another variable that changes which program runs: assigning it writes that variable"
	}
	return assignWhy(name)
}

// refTarget records and checks a name reference declared in argv: to val
// when hasValue (declare -n name=val), else without a target.
func (a *analyser) refTarget(argv []string, name string, val word, hasValue bool) {
	if a.refs == nil {
		a.refs = map[string]string{}
	}
	switch {
	case !hasValue:
		a.refs[name] = ""
		a.dynamic(argv, "name reference without a target: the variable it writes is chosen at run time")
	case val.kind != wStatic || strings.ContainsAny(val.text, "[$`") || !isName(val.text):
		a.refs[name] = ""
		a.dynamic(argv, "name reference to a variable known only at run time")
	default:
		a.refs[name] = val.text
		if a.protected(val.text) {
			a.always("always.assign", argv, a.assignWhy(val.text))
		}
	}
}
