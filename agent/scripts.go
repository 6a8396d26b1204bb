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
// project's package.json. When that text is one the policy allows as a
// command of its own, the programs it names are predicted with the call
// (no unexpected_exec alarm for `sh -c 'node --test'`, node, the test files
// node runs); a script the policy would not allow is not predicted, so
// what it runs raises the alarm, and every program is still judged at its
// exec.

// maxPackageJSON bounds the package.json read to predict its scripts.
const maxPackageJSON = 1 << 20

// packageManagers are the programs that run package.json scripts.
var packageManagers = []string{"npm", "yarn", "pnpm"}

// scriptPrograms are the programs the package scripts the decided command
// runs name, with the shell that runs them; nil when it runs none or they
// cannot be read.
func (t *Tools) scriptPrograms(ctx context.Context, d policy.Decision) []string {
	var names []string
	for _, p := range d.Parts {
		names = append(names, packageScripts(p.Argv)...)
	}
	if len(names) == 0 || t.Session == nil {
		return nil
	}
	res, err := t.Session.ReadFile(ctx, sandbox.ReadRequest{Path: "package.json", Limit: maxPackageJSON, Rules: t.fileRules(false)})
	if err != nil || res.Size > maxPackageJSON {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(res.Content, &pkg) != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		for _, s := range []string{"pre" + n, n, "post" + n} {
			text, ok := pkg.Scripts[s]
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
	return out
}

// packageScripts are the package.json scripts one simple command runs by
// name: npm test (t, tst), start, stop, restart, run (run-script) X;
// yarn X, yarn run X; pnpm X, pnpm run X. Options before the subcommand
// are skipped.
func packageScripts(argv []string) []string {
	if len(argv) < 2 || !slices.Contains(packageManagers, path.Base(argv[0])) {
		return nil
	}
	args := argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil
	}
	switch sub := args[0]; sub {
	case "test", "t", "tst":
		return []string{"test"}
	case "start", "stop", "restart":
		return []string{sub}
	case "run", "run-script", "rum", "urn":
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			return []string{args[1]}
		}
		return nil
	}
	if path.Base(argv[0]) != "npm" {
		return []string{args[0]} // yarn X, pnpm X
	}
	return nil
}
