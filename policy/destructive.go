package policy

import "strings"

// destructive lists options (and subcommand words) that turn an allowed,
// harmless command into one that destroys or runs something: an allow rule
// for the command ("git branch", "find") does not cover them unless one of
// its words names the option ("git branch -D"). Deny and ask rules apply
// as usual; without an allow rule that names the option, the command falls
// to commands.default.
var destructive = map[string][]string{
	"git branch":   {"-D", "-d", "--delete", "-f", "--force", "-M", "-m", "--move"},
	"git tag":      {"-d", "--delete", "-f", "--force"},
	"git stash":    {"drop", "clear"},
	"git reset":    {"--hard", "--merge", "--keep"},
	"git checkout": {"-f", "--force"},
	"git switch":   {"-f", "--force", "--discard-changes"},
	"git clean":    {"-f", "--force"},
	"git push":     {"-f", "--force", "--force-with-lease", "--delete", "-d", "--mirror", "--prune"},
	"git grep":     {"-O", "--open-files-in-pager"},
	"git worktree": {"remove", "prune"},
	"git remote":   {"remove", "rm"},
	"rsync":        {"--delete", "--delete-before", "--delete-during", "--delete-after", "--delete-excluded", "--remove-source-files"},
	"tar":          {"--remove-files"},
}

// guardDestructive turns an allow decision into commands.default when the
// command line carries a destructive option the allow rule does not name.
func (a *analyser) guardDestructive(base string, cl *cmdline, p Part) Part {
	if p.Verdict != Allow || p.Rule == "commands.default" {
		return p
	}
	key, args := base, cl.words[1:]
	if base == "git" {
		i := gitSub(args)
		if i < 0 {
			return p
		}
		key, args = "git "+args[i].text, args[i+1:]
	}
	opts, ok := destructive[key]
	if !ok {
		return p
	}
	r := a.p.cmd.rule(p.Rule)
	for _, w := range args {
		if w.kind != wStatic {
			continue
		}
		if w.text == "--" {
			break
		}
		for _, o := range opts {
			if !hasOpt(w.text, o) || r != nil && ruleNames(r, o) {
				continue
			}
			q := a.p.cmd.decideDefault(cl)
			q.Note = key + " " + o + " destroys or runs something; allow rules must name it (like \"" + key + " " + o + "\")"
			return q
		}
	}
	return p
}

// hasOpt reports whether the argument is the option o: equal, o=value, or
// a cluster of short options holding o's letter (-vD for -D).
func hasOpt(arg, o string) bool {
	if arg == o || strings.HasPrefix(o, "--") && strings.HasPrefix(arg, o+"=") {
		return true
	}
	if len(o) == 2 && o[0] == '-' && len(arg) > 2 && arg[0] == '-' && arg[1] != '-' {
		if o == "-O" { // git grep -O<pager>
			return strings.HasPrefix(arg, "-O")
		}
		return strings.IndexByte(arg[1:], o[1]) >= 0
	}
	return false
}

func ruleNames(r *rule, o string) bool {
	for _, w := range r.words[1:] {
		if globMatch(w, o) {
			return true
		}
	}
	return false
}

// rule returns the rule with the given id, or nil.
func (c *commandRules) rule(id string) *rule {
	for _, list := range c.lists {
		for _, r := range list {
			if r.id == id {
				return r
			}
		}
	}
	return nil
}

// decideDefault decides a command line no allow rule covers: deny and ask
// rules, then commands.default.
func (c *commandRules) decideDefault(cl *cmdline) Part {
	part := Part{Argv: cl.argv()}
	for _, v := range [...]Verdict{Deny, Ask} {
		for _, r := range c.lists[v] {
			if r.matches(cl, true) {
				part.Verdict, part.Rule, part.Pattern, part.Why = v, r.id, r.match, r.why
				return part
			}
		}
	}
	part.Verdict, part.Rule = c.def, "commands.default"
	return part
}
