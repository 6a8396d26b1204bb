package main

import "strings"

// execScript is the bash script `agentbox exec` runs, and the policy sees:
// one argument is a script as written (`exec -- 'ls | wc -l'`); several are
// an argv run exactly as given (`exec -- printf '%s|' 'a  b' '$HOME'`), each
// argument quoted so bash passes it through unchanged.
func execScript(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote leaves a plain word as it is (so policy rules read naturally)
// and single-quotes anything else.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
