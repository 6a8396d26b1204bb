package agent

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// A package manager running a package script (`npm test`, `npm run lint`,
// `yarn build`) runs `sh -c SCRIPT` with the script's text from the
// package.json of the package it runs in: the working directory's (after
// the script's `cd DIR`), or the one an option names (`npm --prefix sub`,
// `-C sub`, `-w sub` by path or by name, `yarn --cwd sub`, `yarn workspace
// NAME`, `pnpm -C sub`/`--dir sub`/`--filter ./sub`). When that text is one
// the policy allows as a command of its own, the programs it names are
// predicted with the call (no unexpected_exec alarm for `sh -c 'node
// --test'`, node, the test files node runs); a script the policy would not
// allow is not predicted, so what it runs raises the alarm, and every
// program is still judged at its exec. A run whose package cannot be told
// (every workspace, `pnpm -r`, a `cd` to an unknown place) predicts
// nothing.

// maxPackageJSON bounds the package.json read to predict its scripts.
const maxPackageJSON = 1 << 20

// packageManagers are the programs that run package.json scripts.
var packageManagers = []string{"npm", "yarn", "pnpm"}

// scriptPrograms are the programs the package scripts the decided command
// runs name, with the shell that runs them; nil when it runs none or they
// cannot be read.
func (t *Tools) scriptPrograms(ctx context.Context, d policy.Decision) []string {
	if t.Session == nil {
		return nil
	}
	var out []string
	cwd := "."                             // the parts' working directory below /workspace ("": unknown)
	read := map[string]map[string]string{} // package.json path → its scripts (nil: none)
	for _, p := range d.Parts {
		if len(p.Argv) > 0 && p.Argv[0] == "cd" {
			cwd = cdDir(cwd, p.Argv[1:])
			continue
		}
		run := packageScripts(p.Argv)
		if len(run.names) == 0 || cwd == "" {
			continue
		}
		scripts := t.packageJSON(ctx, read, cwd, run.dirs)
		for _, n := range run.names {
			for _, s := range []string{"pre" + n, n, "post" + n} {
				text, ok := scripts[s]
				if !ok {
					continue
				}
				sd := t.Policy.Decide(policy.Action{Kind: policy.Command, Command: text})
				if sd.Verdict != policy.Allow {
					continue
				}
				out = append(out, "sh")
				out = append(out, sd.Programs()...)
			}
		}
	}
	return out
}

// packageJSON is the scripts of the first of dirs (relative to cwd) that
// has a package.json; read caches them by path.
func (t *Tools) packageJSON(ctx context.Context, read map[string]map[string]string, cwd string, dirs []string) map[string]string {
	for _, dir := range dirs {
		p := path.Join(dir, "package.json")
		if !path.IsAbs(p) {
			p = path.Join(cwd, p)
		}
		scripts, ok := read[p]
		if !ok {
			scripts = t.readScripts(ctx, p)
			read[p] = scripts
		}
		if scripts != nil {
			return scripts
		}
	}
	return nil
}

// readScripts is the scripts of the package.json at p (nil: none).
func (t *Tools) readScripts(ctx context.Context, p string) map[string]string {
	res, err := t.Session.ReadFile(ctx, sandbox.ReadRequest{Path: p, Limit: maxPackageJSON, Rules: t.fileRules(false)})
	if err != nil || res.Size > maxPackageJSON {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(res.Content, &pkg) != nil || pkg.Scripts == nil {
		return nil
	}
	return pkg.Scripts
}

// cdDir is the working directory after `cd args` in cwd: "" when it
// cannot be told (no argument, `-`, a word known only at run time).
func cdDir(cwd string, args []string) string {
	if cwd == "" || len(args) != 1 || args[0] == "-" || args[0] == "" || strings.ContainsAny(args[0], "$`~*?[") {
		return ""
	}
	d := path.Clean(args[0])
	switch {
	case d == "/workspace":
		return "."
	case strings.HasPrefix(d, "/workspace/"):
		return strings.TrimPrefix(d, "/workspace/")
	case path.IsAbs(d):
		return d // outside the workspace: read as it is
	}
	return path.Join(cwd, d)
}

// packageRun is what one package manager command runs: the scripts, by
// name, and where their package.json is (the first of dirs that has one,
// relative to the working directory).
type packageRun struct {
	names []string
	dirs  []string
}

// dirOptions are the options of each package manager that name the
// package a script runs in: "dir" takes a directory, "workspace" a
// directory or a workspace package's name (linked under node_modules),
// "filter" a pnpm selector (a path when it starts with . or /), "all" runs
// it in every workspace package (nothing predicted).
var dirOptions = map[string]map[string]string{
	"npm":  {"--prefix": "dir", "-C": "dir", "-w": "workspace", "--workspace": "workspace", "-ws": "all", "--workspaces": "all"},
	"yarn": {"--cwd": "dir"},
	"pnpm": {"-C": "dir", "--dir": "dir", "--filter": "filter", "-F": "filter", "-r": "all", "--recursive": "all"},
}

// packageScripts are the package.json scripts one simple command runs by
// name, and where: npm test (t, tst), start, stop, restart, run
// (run-script) X; yarn X, yarn run X, yarn workspace NAME [run] X; pnpm
// X, pnpm run X. Options are skipped, up to `--` (the script's own
// arguments); the ones that name the package (dirOptions) say where.
func packageScripts(argv []string) packageRun {
	if len(argv) < 2 || !slices.Contains(packageManagers, path.Base(argv[0])) {
		return packageRun{}
	}
	pm := path.Base(argv[0])
	run := packageRun{dirs: []string{"."}}
	var words []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		kind, ok := dirOptions[pm][name]
		if !ok {
			if !strings.HasPrefix(a, "-") {
				words = append(words, a)
			}
			continue
		}
		if kind == "all" {
			return packageRun{}
		}
		if !hasVal {
			if i+1 >= len(argv) {
				return packageRun{}
			}
			i++
			val = argv[i]
		}
		switch {
		case val == "":
			return packageRun{}
		case kind == "dir":
			run.dirs = []string{val}
		case kind == "workspace":
			run.dirs = []string{val, path.Join("node_modules", val)}
		case kind == "filter" && (strings.HasPrefix(val, ".") || strings.HasPrefix(val, "/")):
			run.dirs = []string{val}
		default:
			return packageRun{} // a package by name: not told here
		}
	}
	if pm == "yarn" && len(words) >= 3 && words[0] == "workspace" {
		run.dirs = []string{path.Join("node_modules", words[1])}
		words = words[2:]
	}
	if len(words) == 0 {
		return packageRun{}
	}
	switch sub := words[0]; sub {
	case "test", "t", "tst":
		run.names = []string{"test"}
	case "start", "stop", "restart":
		run.names = []string{sub}
	case "run", "run-script", "rum", "urn":
		if len(words) > 1 {
			run.names = []string{words[1]}
		}
	default:
		if pm != "npm" {
			run.names = []string{sub} // yarn X, pnpm X
		}
	}
	return run
}
