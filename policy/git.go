package policy

import "strings"

// gitGlobalArg are git's global options that take a separate argument.
var gitGlobalArg = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--config-env": true, "--exec-path": false, "--super-prefix": true, "--list-cmds": false}

// safeGitConfig are configuration keys that git -c may set without
// running anything: most keys (core.pager, core.fsmonitor, core.sshCommand,
// alias.*, diff.external, filter.*, pager.*, ...) can make git run a
// command.
var safeGitConfig = []string{"user.", "color.", "advice.", "core.quotepath", "init.defaultbranch", "commit.gpgsign",
	"log.", "format.pretty", "diff.noprefix", "diff.renames", "pull.rebase", "merge.conflictstyle", "safe.directory", "i18n."}

// gitChdir handles git -C DIR: the rest runs in DIR, so the command is
// decided as if -C were not there (rules that name -C still count), with
// its files relative to DIR. It reports whether it decided the line.
func (a *analyser) gitChdir(cl *cmdline, d int, in stdinInfo, wd int) bool {
	args := cl.words[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.kind != wStatic || !strings.HasPrefix(w.text, "-") {
			return false
		}
		s := w.text
		name, _, hasVal := strings.Cut(s, "=")
		if !strings.HasPrefix(s, "-C") {
			if gitGlobalArg[name] && !hasVal {
				i++
			}
			continue
		}
		dir, rest := staticWord(s[2:]), i+1
		if s == "-C" {
			if i+1 >= len(args) {
				return false
			}
			dir, rest = args[i+1], i+2
		}
		inner := &cmdline{words: append(append([]word{cl.words[0]}, args[:i]...), args[rest:]...), open: cl.open}
		if p := a.p.cmd.decide(cl); p.Rule != "commands.default" && p.Verdict >= Ask {
			a.add(p, cl)
		}
		a.inDir(&dir, func() { a.simple(inner, d, in, wd+1) })
		return true
	}
	return false
}

// gitOptions makes commands.dynamic the global options that let git run
// a command: -c with a key that can (core.pager, core.fsmonitor, alias.*),
// --exec-path=DIR and --config-env, and options known only at run time.
func (a *analyser) gitOptions(cl *cmdline) {
	args := cl.words[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.kind != wStatic {
			if strings.HasPrefix(w.prefix, "-") || w.prefix == "" && i == 0 {
				a.dynamic(cl.argv(), "git option known only at run time")
			}
			return
		}
		s := w.text
		if !strings.HasPrefix(s, "-") {
			return
		}
		name, val, hasVal := strings.Cut(s, "=")
		switch {
		case name == "-c":
			v := val
			if !hasVal {
				if i+1 >= len(args) {
					return
				}
				i++
				if args[i].kind != wStatic {
					a.dynamic(cl.argv(), "git -c with configuration known only at run time can run commands")
					return
				}
				v = args[i].text
			}
			if !safeGitKey(v) {
				a.dynamic(cl.argv(), "git -c "+v+": this configuration can make git run a command (core.pager, core.fsmonitor, alias.*=!cmd, ...)")
			}
		case name == "--exec-path" && hasVal, name == "--config-env":
			a.dynamic(cl.argv(), "git "+name+" makes git run programs or configuration named at run time")
			if !hasVal {
				i++
			}
		case gitGlobalArg[name] && !hasVal:
			i++
		}
	}
}

func safeGitKey(kv string) bool {
	k, _, _ := strings.Cut(strings.ToLower(kv), "=")
	for _, s := range safeGitConfig {
		if strings.HasSuffix(s, ".") && strings.HasPrefix(k, s) && !strings.Contains(k, "cmd") && !strings.Contains(k, "command") || k == s {
			return true
		}
	}
	return false
}

// gitSub returns the index in args of git's subcommand, or -1.
func gitSub(args []word) int {
	for i := 0; i < len(args); i++ {
		s := args[i].text
		if args[i].kind != wStatic {
			return -1
		}
		if !strings.HasPrefix(s, "-") {
			return i
		}
		if name, _, hasVal := strings.Cut(s, "="); gitGlobalArg[name] && !hasVal {
			i++
		}
	}
	return -1
}

// gitFiles lists the files git's options write: --output (log, diff, show,
// format-patch, archive), format-patch -o DIR, archive -o FILE, bundle
// create FILE; and the pager command of grep -O.
func gitFiles(args []word) []fileTarget {
	i := gitSub(args)
	if i < 0 {
		return nil
	}
	sub, rest := args[i].text, args[i+1:]
	var out []fileTarget
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		if w.kind != wStatic {
			if strings.HasPrefix(w.prefix, "--output") {
				out = append(out, fileTarget{w: w, role: roleWrite, opt: "--output"})
			}
			continue
		}
		s := w.text
		if s == "--" {
			break
		}
		next := func() word {
			if j+1 < len(rest) {
				j++
				return rest[j]
			}
			return staticWord("")
		}
		switch {
		case s == "--output" || s == "--output-directory":
			r := roleWrite
			if s == "--output-directory" {
				r = roleWriteDir
			}
			out = append(out, fileTarget{w: next(), role: r, opt: s})
		case strings.HasPrefix(s, "--output="):
			out = append(out, fileTarget{w: staticWord(s[len("--output="):]), role: roleWrite, opt: "--output"})
		case strings.HasPrefix(s, "--output-directory="):
			out = append(out, fileTarget{w: staticWord(s[len("--output-directory="):]), role: roleWriteDir, opt: "--output-directory"})
		case (sub == "format-patch" || sub == "archive") && strings.HasPrefix(s, "-o"):
			v := staticWord(s[2:])
			if s == "-o" {
				v = next()
			}
			r := roleWrite
			if sub == "format-patch" {
				r = roleWriteDir
			}
			out = append(out, fileTarget{w: v, role: r, opt: "-o"})
		case sub == "grep" && (strings.HasPrefix(s, "-O") && len(s) > 2 || strings.HasPrefix(s, "--open-files-in-pager=")):
			cmd := strings.TrimPrefix(strings.TrimPrefix(s, "--open-files-in-pager="), "-O")
			out = append(out, fileTarget{w: staticWord(cmd + " file"), role: roleCode, opt: "-O"})
		case sub == "bundle" && s == "create":
			out = append(out, fileTarget{w: next(), role: roleWrite, opt: "bundle create"})
		}
	}
	return out
}
