package agent

import (
	"context"
	"path"
	"regexp"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// ApprovalStore holds the command prefixes the user answered "always" to,
// for one workspace, across sessions (the CLI keeps them in the state
// directory: `agentbox approvals list|remove`).
type ApprovalStore interface {
	// Prefixes are the remembered command prefixes, words joined by
	// single spaces.
	Prefixes() []string
	// Add remembers more prefixes.
	Add(prefixes []string) error
	// Where says where Add saves them (the file and the workspace), for
	// the prompt to show before the user picks.
	Where() string
}

// Remembered allows, without asking, an execute_bash call whose every
// asking command starts with a prefix of Store; anything else goes to
// Next.
type Remembered struct {
	Store ApprovalStore
	Next  Approver
}

var _ Approver = Remembered{}

// Approve allows remembered commands and asks Next about the rest.
func (r Remembered) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	if ap, ok := savedAnswer(r.Store, req); ok {
		return ap, nil
	}
	if r.Next == nil {
		return DenyAll{}.Approve(ctx, req)
	}
	return r.Next.Approve(ctx, req)
}

// askParts are the parts of d that ask.
func askParts(d policy.Decision) []policy.Part {
	var out []policy.Part
	for _, part := range d.Parts {
		if part.Verdict == policy.Ask {
			out = append(out, part)
		}
	}
	return out
}

// rememberPrefix is what "always" remembers for a part: the rule's pattern
// when it is plain words (`git push`), else the program and its
// subcommand (`git commit` for `git -c user.email=x commit -m "msg"`),
// never the arguments and messages of the one command shown.
func rememberPrefix(part policy.Part) string {
	if part.Pattern != "" && !strings.ContainsAny(part.Pattern, "*?[]{}\\\"'$") && strings.Contains(part.Rule, "[") {
		return strings.Join(strings.Fields(part.Pattern), " ")
	}
	if len(part.Argv) == 0 {
		return ""
	}
	prog := part.Argv[0]
	if !exactProgram(part) {
		prog = path.Base(prog)
	}
	args := part.Argv[1:]
	if path.Base(part.Argv[0]) == "git" {
		args = gitFromSubcommand(args)
	}
	if len(args) > 0 && subcommandRE.MatchString(args[0]) {
		return prog + " " + args[0] // a word prefix of argv, as a rule is
	}
	return prog
}

// subcommandRE is a word that names a subcommand (`commit`, `test`,
// `run-script`), not a file, a path, an assignment or a message.
var subcommandRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,39}$`)

// exactProgram reports whether a part's program is matched by its exact
// path: a program the session may have made (unknown_binaries) is never
// covered by the basename of another.
func exactProgram(part policy.Part) bool {
	return part.Rule == "commands.unknown_binaries"
}

// gitGlobalArg are git's global options that take the next word.
var gitGlobalArg = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--config-env": true, "--super-prefix": true}

// gitFromSubcommand is git's arguments from its subcommand on (git's
// global options before it skipped; the policy judges them on their own).
func gitFromSubcommand(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return args[i:]
		}
		if gitGlobalArg[a] {
			i++
		}
	}
	return nil
}

// matchPrefix returns the prefix of prefixes that part's argv starts with,
// word by word, exactly as the policy's own rules match: the first word
// also matches the basename of a path (`pip install` covers
// `.venv/bin/pip install y`), and git's global options before the
// subcommand are skipped (`git commit` covers `git -c user.name=x commit`;
// the options are judged on their own). "" if none.
func matchPrefix(part policy.Part, prefixes []string) string {
	argv := part.Argv
	if len(argv) == 0 {
		return ""
	}
	alts := [][]string{argv}
	if path.Base(argv[0]) == "git" {
		if rest := gitFromSubcommand(argv[1:]); len(rest) != len(argv)-1 {
			alts = append(alts, append([]string{argv[0]}, rest...))
		}
	}
	for _, p := range prefixes {
		words := strings.Split(p, " ")
		for _, a := range alts {
			if prefixMatches(words, a, exactProgram(part)) {
				return p
			}
		}
	}
	return ""
}

func prefixMatches(words, argv []string, exact bool) bool {
	if len(words) == 0 || len(words) > len(argv) {
		return false
	}
	for i, w := range words {
		if argv[i] == w || i == 0 && !exact && !strings.Contains(w, "/") && path.Base(argv[0]) == w {
			continue
		}
		return false
	}
	return true
}
