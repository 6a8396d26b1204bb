package policy

import "strings"

// roleCode marks an option whose value is a command the program runs
// (tar --to-command, tar -I PROG, go build -toolexec).
const roleCode fileRole = 100

// tarFiles lists the files of a tar command line: the archive (-f) is
// written when creating or appending and read otherwise, -C DIR is written
// into when extracting, -T/-X lists are read, and options that run a
// program are code.
func tarFiles(args []word) []fileTarget {
	withArg := "fCTXbHKLNVgIF"
	var mode byte
	var out []fileTarget
	var archive, dir *word
	add := func(c byte, v word) {
		switch c {
		case 'f':
			archive = &v
		case 'C':
			dir = &v
		case 'T', 'X':
			out = append(out, fileTarget{w: v, role: roleRead, opt: "-" + string(c)})
		case 'g':
			out = append(out, fileTarget{w: v, role: roleWrite, opt: "-g"})
		case 'I', 'F':
			out = append(out, fileTarget{w: v, role: roleCode, opt: "-" + string(c)})
		}
	}
	i := 0
	if len(args) > 0 && args[0].kind == wStatic && !strings.HasPrefix(args[0].text, "-") {
		// old style: tar czf ARCHIVE FILES; letters' arguments follow in order
		letters := args[0].text
		i = 1
		for j := 0; j < len(letters); j++ {
			c := letters[j]
			if strings.IndexByte("cxtrudA", c) >= 0 {
				mode = c
			}
			if strings.IndexByte(withArg, c) >= 0 && i < len(args) {
				add(c, args[i])
				i++
			}
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		s := a.text
		if a.kind != wStatic || len(s) < 2 || s[0] != '-' {
			continue
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasVal := strings.Cut(s[2:], "=")
			v := staticWord(val)
			takes := func() {
				if !hasVal && i+1 < len(args) {
					i++
					v = args[i]
				}
			}
			switch name {
			case "create", "append", "update", "catenate", "concatenate":
				mode = 'c'
			case "extract", "get":
				mode = 'x'
			case "file":
				takes()
				add('f', v)
			case "directory":
				takes()
				add('C', v)
			case "files-from", "exclude-from":
				takes()
				add('T', v)
			case "listed-incremental", "index-file":
				takes()
				add('g', v)
			case "to-command", "use-compress-program", "info-script", "new-volume-script", "rsh-command", "rmt-command":
				takes()
				add('I', v)
			case "checkpoint-action":
				if !hasVal || strings.HasPrefix(val, "exec") {
					takes()
					add('I', v)
				}
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			c := s[j]
			if strings.IndexByte("cxtrudA", c) >= 0 {
				mode = c
			}
			if strings.IndexByte(withArg, c) < 0 {
				continue
			}
			v := staticWord(s[j+1:])
			if j+1 == len(s) && i+1 < len(args) {
				i++
				v = args[i]
			}
			add(c, v)
			break
		}
	}
	if archive != nil && archive.text != "-" {
		r := roleRead
		if strings.IndexByte("cruA", mode) >= 0 && mode != 0 {
			r = roleWrite
		}
		out = append(out, fileTarget{w: *archive, role: r, opt: "-f"})
	}
	if dir != nil && mode == 'x' {
		out = append(out, fileTarget{w: *dir, role: roleWriteDir, opt: "-C"})
	}
	return out
}

// unzipFiles: unzip -d DIR extracts into DIR.
func unzipFiles(args []word) []fileTarget {
	for i, a := range args {
		if a.kind == wStatic && a.text == "-d" && i+1 < len(args) {
			return []fileTarget{{w: args[i+1], role: roleWriteDir, opt: "-d"}}
		}
	}
	return nil
}
