package policy_test

import (
	"fmt"

	"github.com/agentbox/agentbox/policy"
)

// Decide is pure: the same action always gets the same decision, with the
// rule that made it. A script's decision is the most restrictive of its
// commands.
func ExamplePolicy_Decide() {
	p, err := policy.Parse("example.yaml", []byte(`
version: 1
commands:
  default: ask
  allow: [ls, grep, "git status"]
  deny: [sudo]
files:
  write: {allow: ["**"], deny: [".git/hooks/**"]}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range []policy.Action{
		{Kind: policy.Command, Command: "ls -la | grep go"},
		{Kind: policy.Command, Command: "git status && make"},
		{Kind: policy.Command, Command: "sudo rm -rf /"},
		{Kind: policy.Write, Path: ".git/hooks/pre-commit"},
	} {
		d := p.Decide(a)
		fmt.Printf("%s: %s (%s)\n", a.Command+a.Path, d.Verdict, d.Rule)
	}
	// Output:
	// ls -la | grep go: allow (commands.allow[0])
	// git status && make: ask (commands.default)
	// sudo rm -rf /: deny (commands.deny[0])
	// .git/hooks/pre-commit: deny (files.write.deny[0])
}
