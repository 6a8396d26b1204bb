package policy

import (
	"path"
	"strings"
)

// fileRole is what a program does with a file named by an option or an
// operand.
type fileRole uint8

const (
	roleNone     fileRole = iota
	roleWrite             // written, created or removed
	roleWriteDir          // a directory written into (cp -t, wget -P, tar -x -C)
	roleRead              // read
)

// fileSpec describes the options and operands of a program that name
// files. Options not listed are taken to have no argument unless they are
// in shortArg/longArg (then their argument is skipped).
type fileSpec struct {
	short    map[byte]fileRole
	long     map[string]fileRole
	shortArg string   // other short options that take an argument
	longArg  []string // other long options that take an argument
	// operands gives the role of the operands (after options are removed).
	operands func(ops []word) []fileRole
}

func allOps(r fileRole) func([]word) []fileRole {
	return func(ops []word) []fileRole {
		out := make([]fileRole, len(ops))
		for i := range out {
			out[i] = r
		}
		return out
	}
}

// afterFirst: the first operand is not a file (a mode, an owner, a sed
// script), the others are.
func afterFirst(r fileRole) func([]word) []fileRole {
	return func(ops []word) []fileRole {
		out := allOps(r)(ops)
		if len(out) > 0 {
			out[0] = roleNone
		}
		return out
	}
}

// lastOp: the last operand is the destination (cp, mv, ln, install).
func lastOp(ops []word) []fileRole {
	out := make([]fileRole, len(ops))
	if len(ops) > 1 {
		out[len(ops)-1] = roleWrite
	}
	return out
}

var (
	w, wd, rd = roleWrite, roleWriteDir, roleRead
)

var fileSpecs = map[string]*fileSpec{
	"sort": {short: map[byte]fileRole{'o': w, 'T': wd}, long: map[string]fileRole{"output": w, "temporary-directory": wd, "files0-from": rd, "random-source": rd},
		shortArg: "kStz", longArg: []string{"key", "buffer-size", "field-separator", "parallel", "compress-program", "batch-size", "sort"}},
	"uniq": {shortArg: "fsw", longArg: []string{"skip-fields", "skip-chars", "check-chars"},
		operands: func(ops []word) []fileRole { // uniq [INPUT [OUTPUT]]
			out := make([]fileRole, len(ops))
			if len(ops) > 1 {
				out[1] = roleWrite
			}
			return out
		}},
	"tee":   {operands: allOps(w)},
	"cp":    {short: map[byte]fileRole{'t': wd}, long: map[string]fileRole{"target-directory": wd}, shortArg: "S", longArg: []string{"suffix", "backup", "sparse", "reflink", "preserve", "no-preserve"}, operands: lastOp},
	"mv":    {short: map[byte]fileRole{'t': wd}, long: map[string]fileRole{"target-directory": wd}, shortArg: "S", longArg: []string{"suffix", "backup"}, operands: lastOp},
	"ln":    {short: map[byte]fileRole{'t': wd}, long: map[string]fileRole{"target-directory": wd}, shortArg: "S", longArg: []string{"suffix", "backup"}, operands: lastOp},
	"install": {short: map[byte]fileRole{'t': wd}, long: map[string]fileRole{"target-directory": wd}, shortArg: "gmoSZ",
		longArg: []string{"group", "mode", "owner", "suffix", "backup", "context", "strip-program"}, operands: lastOp},
	"rm":       {operands: allOps(w)},
	"rmdir":    {operands: allOps(w)},
	"unlink":   {operands: allOps(w)},
	"shred":    {shortArg: "ns", longArg: []string{"iterations", "size", "random-source", "remove"}, operands: allOps(w)},
	"touch":    {short: map[byte]fileRole{'r': rd}, long: map[string]fileRole{"reference": rd}, shortArg: "dt", longArg: []string{"date", "time"}, operands: allOps(w)},
	"mkdir":    {shortArg: "m", longArg: []string{"mode", "context"}, operands: allOps(w)},
	"truncate": {short: map[byte]fileRole{'r': rd}, long: map[string]fileRole{"reference": rd}, shortArg: "s", longArg: []string{"size"}, operands: allOps(w)},
	"chmod":    {long: map[string]fileRole{"reference": rd}, operands: afterFirst(w)},
	"chown":    {long: map[string]fileRole{"reference": rd}, operands: afterFirst(w)},
	"chgrp":    {long: map[string]fileRole{"reference": rd}, operands: afterFirst(w)},
	"sed": {short: map[byte]fileRole{'f': rd}, long: map[string]fileRole{"file": rd}, shortArg: "el", longArg: []string{"expression", "line-length"},
		operands: afterFirst(roleNone)}, // -i makes the operands written: see sedInPlace
	"date":  {short: map[byte]fileRole{'f': rd, 'r': rd}, long: map[string]fileRole{"file": rd, "reference": rd}, shortArg: "dI", longArg: []string{"date", "iso-8601", "rfc-3339"}},
	"xargs": {short: map[byte]fileRole{'a': rd}, long: map[string]fileRole{"arg-file": rd}},
	"grep":  {short: map[byte]fileRole{'f': rd}, long: map[string]fileRole{"file": rd, "exclude-from": rd}, shortArg: "ABCdDemE", longArg: []string{"regexp", "max-count", "context", "label", "exclude", "include", "exclude-dir", "binary-files", "devices", "directories", "color", "colour", "group-separator"}},
	"awk":   {short: map[byte]fileRole{'f': rd}, long: map[string]fileRole{"file": rd}, shortArg: "vF", longArg: []string{"assign", "field-separator"}},
	"jq":    {short: map[byte]fileRole{'f': rd}, long: map[string]fileRole{"from-file": rd}, longArg: []string{"arg", "argjson", "indent", "tab"}},
	"curl": {short: map[byte]fileRole{'o': w, 'D': w, 'c': w, 'K': rd, 'T': rd}, long: map[string]fileRole{"output": w, "dump-header": w, "cookie-jar": w,
		"trace": w, "trace-ascii": w, "stderr": w, "output-dir": wd, "etag-save": w, "config": rd, "upload-file": rd, "netrc-file": rd},
		shortArg: "AbCdeEFHmrutuUwXxYyz", longArg: []string{"data", "data-binary", "data-raw", "data-urlencode", "form", "header", "user", "user-agent", "request", "url", "proxy", "max-time", "connect-timeout", "retry", "cookie", "referer", "range", "write-out"}},
	"wget": {short: map[byte]fileRole{'O': w, 'o': w, 'a': w, 'P': wd, 'i': rd}, long: map[string]fileRole{"output-document": w, "output-file": w, "append-output": w,
		"directory-prefix": wd, "input-file": rd, "post-file": rd, "body-file": rd, "save-cookies": w, "load-cookies": rd},
		shortArg: "tTUeQlAR", longArg: []string{"tries", "timeout", "user-agent", "header", "user", "password", "level", "accept", "reject", "post-data", "method", "execute"}},
	"patch": {short: map[byte]fileRole{'o': w, 'i': rd, 'r': w}, long: map[string]fileRole{"output": w, "input": rd, "reject-file": w},
		shortArg: "BDFpVYz", longArg: []string{"prefix", "ifdef", "fuzz", "strip", "version-control", "basename-prefix", "suffix"}},
	"strace": {short: map[byte]fileRole{'o': w}, long: map[string]fileRole{"output": w}, shortArg: "abeEIpPsSuUX"},
	"openssl": {}, // -in/-out: single-dash long options, see singleDashFiles
	"go":      {}, // -o, -coverprofile, ...: see goFiles
	"dd":      {}, // of=, if=: see ddFiles
}

// genericWrite are long options that name an output file in most programs
// (cc -o and the like use -o, see noGenericO).
var genericWrite = map[string]fileRole{"output": w, "output-file": w, "outfile": w, "out-file": w, "output-document": w, "output-dir": wd, "outdir": wd, "output-directory": wd}

var (
	genericSpec    = &fileSpec{long: genericWrite, short: map[byte]fileRole{'o': w}}
	genericSpecNoO = &fileSpec{long: genericWrite}
)

// noGenericO are programs whose -o is not an output file.
var noGenericO = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "rg": true, "ls": true, "ps": true, "ssh": true, "scp": true,
	"cpio": true, "set": true, "bash": true, "sh": true, "mount": true, "tar": true, "pgrep": true, "pkill": true, "od": true, "xargs": true,
	"lsof": true, "netstat": true, "top": true, "apt": true, "apt-get": true, "dpkg": true, "pytest": true, "kubectl": true, "git": true,
	"find": true, "env": true, "time": true, "shopt": true, "watch": true, "dig": true, "free": true, "sysctl": true, "uniq": true,
	"install": true, "python": true, "python3": true, "node": true, "npm": true, "make": true, "go": true}

// fileTarget is one file a command line names, with what it does to it.
type fileTarget struct {
	w    word
	role fileRole
	opt  string // the option naming it, "" for an operand
}

// fileTargets lists the files a command names through its options and
// operands, as far as the program is known.
func fileTargets(base string, args []word) []fileTarget {
	switch base {
	case "go":
		return goFiles(args)
	case "dd":
		return ddFiles(args)
	case "openssl":
		return singleDashFiles(args, map[string]fileRole{"out": w, "in": rd, "keyout": w, "inkey": rd, "key": rd})
	case "tar", "bsdtar":
		return tarFiles(args)
	case "unzip":
		return unzipFiles(args)
	case "git":
		return nil // see git.go
	}
	spec := fileSpecs[base]
	generic := spec == nil
	if generic {
		spec = genericSpec
		if noGenericO[base] {
			spec = genericSpecNoO
		}
	}
	var out []fileTarget
	var ops []word
	endOpts := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.text
		if !endOpts && a.kind == wDynamic && strings.HasPrefix(a.prefix, "--") && strings.Contains(a.prefix, "=") {
			name, _, _ := strings.Cut(a.prefix[2:], "=")
			if r := spec.long[name]; r == roleWrite || r == roleWriteDir || genericWrite[name] != roleNone {
				out = append(out, fileTarget{w: a, role: roleWrite, opt: "--" + name})
			}
			continue
		}
		if endOpts || a.kind != wStatic || len(s) < 2 || s[0] != '-' {
			ops = append(ops, a)
			continue
		}
		if s == "--" {
			endOpts = true
			continue
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasVal := strings.Cut(s[2:], "=")
			role, known := spec.long[name]
			if !known && !generic {
				role, known = genericWrite[name], genericWrite[name] != roleNone
			}
			if known || contains(spec.longArg, name) {
				v := staticWord(val)
				if !hasVal && i+1 < len(args) {
					i++
					v = args[i]
				}
				if known {
					out = append(out, fileTarget{w: v, role: role, opt: "--" + name})
				}
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			c := s[j]
			role, known := spec.short[c]
			if !known && strings.IndexByte(spec.shortArg, c) < 0 {
				continue
			}
			v := staticWord(s[j+1:])
			if j+1 == len(s) && i+1 < len(args) {
				i++
				v = args[i]
			}
			if known {
				out = append(out, fileTarget{w: v, role: role, opt: "-" + string(c)})
			}
			break
		}
	}
	if spec.operands != nil {
		roles := spec.operands(ops)
		for i, r := range roles {
			if r != roleNone {
				out = append(out, fileTarget{w: ops[i], role: r})
			}
		}
		if base == "cp" || base == "mv" || base == "ln" || base == "install" {
			out = append(out, intoDir(ops)...)
		}
	}
	if base == "sed" && sedInPlace(args) {
		for i, op := range ops {
			if i > 0 || hasScriptOpt(args) {
				out = append(out, fileTarget{w: op, role: roleWrite, opt: "-i"})
			}
		}
	}
	return out
}

// intoDir: cp SRC... DIR writes DIR/base(SRC): `cp config .git` writes
// .git/config.
func intoDir(ops []word) []fileTarget {
	if len(ops) < 2 {
		return nil
	}
	dst := ops[len(ops)-1]
	if dst.kind != wStatic {
		return nil
	}
	var out []fileTarget
	for _, src := range ops[:len(ops)-1] {
		if src.kind == wStatic && src.text != "" {
			out = append(out, fileTarget{w: staticWord(path.Join(dst.text, path.Base(src.text))), role: roleWrite})
		}
	}
	return out
}

func sedInPlace(args []word) bool {
	for _, a := range args {
		if a.kind == wStatic && (strings.HasPrefix(a.text, "--in-place") ||
			len(a.text) > 1 && a.text[0] == '-' && a.text[1] != '-' && strings.IndexByte(a.text, 'i') > 0 && !strings.ContainsAny(a.text[1:strings.IndexByte(a.text, 'i')], "ef")) {
			return true
		}
	}
	return false
}

func hasScriptOpt(args []word) bool {
	for _, a := range args {
		if a.kind == wStatic && (a.text == "-e" || a.text == "-f" || strings.HasPrefix(a.text, "--expression") || strings.HasPrefix(a.text, "--file")) {
			return true
		}
	}
	return false
}

// ddFiles: of=FILE is written, if=FILE read.
func ddFiles(args []word) []fileTarget {
	var out []fileTarget
	for _, a := range args {
		if v, ok := strings.CutPrefix(a.text, "of="); ok && a.kind == wStatic {
			out = append(out, fileTarget{w: staticWord(v), role: roleWrite, opt: "of="})
		} else if v, ok := strings.CutPrefix(a.text, "if="); ok && a.kind == wStatic {
			out = append(out, fileTarget{w: staticWord(v), role: roleRead, opt: "if="})
		}
	}
	return out
}

// singleDashFiles handles programs with long options after one dash
// (openssl -out FILE, go -coverprofile FILE).
func singleDashFiles(args []word, opts map[string]fileRole) []fileTarget {
	var out []fileTarget
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.kind != wStatic || !strings.HasPrefix(a.text, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		role, ok := opts[name]
		if !ok {
			continue
		}
		v := staticWord(val)
		if !hasVal {
			if i+1 >= len(args) {
				continue
			}
			i++
			v = args[i]
		}
		out = append(out, fileTarget{w: v, role: role, opt: "-" + name})
	}
	return out
}

func goFiles(args []word) []fileTarget {
	return singleDashFiles(args, map[string]fileRole{"o": w, "coverprofile": w, "cpuprofile": w, "memprofile": w,
		"blockprofile": w, "mutexprofile": w, "trace": w, "outputdir": wd, "modfile": rd, "overlay": rd, "pgo": rd})
}
