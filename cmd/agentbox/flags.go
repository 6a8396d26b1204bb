package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// hoistFlags is the one place flags written after positional arguments
// become flags (`agentbox run "task" --json`, `policy explain 'ls' --json`):
// it finds the command the arguments name, moves every flag of that command
// in front of the positionals and ends the flags with "--", so urfave/cli
// (whose parser stops at the first positional) sees them all. `--` still
// ends the flags: what follows it is positional, unchanged. An unknown
// flag is a usage error naming the closest known flag and the command's
// help. Arguments that name no leaf command are returned unchanged.
func hoistFlags(app *cli.App, args []string) ([]string, error) {
	if slices.Contains(args, completionFlag) {
		// Completing never runs anything: a "--" would make the flag a
		// positional argument of the command.
		return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--" }), nil
	}
	if len(args) < 2 {
		return args, nil
	}
	cmds := app.Commands
	path := []string{}
	i := 1
	var leaf *cli.Command
	for i < len(args) {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		leaf, path = c, append(path, c.Name)
		i++
		if len(c.Subcommands) == 0 {
			break
		}
		cmds = c.Subcommands
	}
	if leaf == nil || len(leaf.Subcommands) > 0 || leaf.Hidden || leaf.SkipFlagParsing {
		return args, nil
	}
	names := map[string]cli.Flag{"help": cli.HelpFlag, "h": cli.HelpFlag}
	for _, f := range leaf.Flags {
		for _, n := range f.Names() {
			names[n] = f
		}
	}
	help := "agentbox " + strings.Join(path, " ") + " --help"
	var flags, pos []string
	rest := args[i:]
	for len(rest) > 0 {
		tok := rest[0]
		rest = rest[1:]
		if tok == "--" {
			pos = append(pos, rest...)
			break
		}
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			pos = append(pos, tok)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(tok, "-"), "=")
		f, ok := names[name]
		if !ok {
			msg := fmt.Sprintf("unknown flag %s", tok)
			if s := closestFlag(name, names); s != "" {
				msg += fmt.Sprintf("; did you mean %s?", s)
			}
			if leaf.Name == "exec" {
				msg += " (a flag for the command goes after --: agentbox exec -- ls " + tok + ")"
			}
			return nil, usageError{fmt.Errorf("%s (see %s)", msg, help)}
		}
		flags = append(flags, tok)
		if !hasValue && takesValue(f) {
			if len(rest) == 0 {
				return nil, usageError{fmt.Errorf("flag %s needs a value (see %s)", tok, help)}
			}
			flags = append(flags, rest[0])
			rest = rest[1:]
		}
	}
	out := append(append([]string{}, args[:i]...), flags...)
	if len(pos) > 0 {
		out = append(append(out, "--"), pos...)
	}
	return out, nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag consumes the next argument.
func takesValue(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag:
		return false
	}
	return true
}

// closestFlag is the known flag nearest to name (edit distance at most 2,
// or a prefix), spelled with its dashes; "" if none is close.
func closestFlag(name string, names map[string]cli.Flag) string {
	best, bestD := "", 3
	for n := range names {
		d := editDistance(name, n)
		if len(name) >= 2 && strings.HasPrefix(n, name) && d > 1 {
			d = 1
		}
		if d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	if len(best) == 1 {
		return "-" + best
	}
	return "--" + best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
