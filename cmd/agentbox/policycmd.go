package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v2"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "validate and explain policies",
		Subcommands: []*cli.Command{
			showDefaultCommand(),
			policyDiffCommand(),
			policySuggestCommand(),
			{
				Name:      "check",
				Usage:     "validate a policy file (default: ./agentbox.yaml, else the built-in default); with --within, prove it allows nothing BOUNDARY denies or asks",
				ArgsUsage: "[FILE] [--within BOUNDARY]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "within", Usage: "prove FILE never decides less restrictively than BOUNDARY (\"default\": the built-in); exit 1 with counterexamples"},
					logFlag(),
					&cli.BoolFlag{Name: "json", Usage: "with --within: print the report as JSON"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() > 1 {
						return usageError{errors.New("policy check takes one FILE")}
					}
					if c.IsSet("within") {
						return checkWithin(c, c.Args().First())
					}
					p, err := policy.Resolve(c.Args().First())
					if err != nil {
						for _, line := range policy.LoadErrors(err) {
							fmt.Fprintln(c.App.ErrWriter, line)
						}
						return exitWith(exitUsage, nil)
					}
					fmt.Fprintf(c.App.Writer, "ok: %s is valid (sha256 %s)\n", p.Describe(), p.SHA256[:12])
					if p.FromScratch() {
						writeScratchNote(c.App.Writer, p)
					}
					return nil
				},
			},
			{
				Name:      "explain",
				Usage:     "show how the policy decides a command or a file access, and why",
				ArgsUsage: "(COMMAND | --read PATH | --write PATH | --connect HOST:PORT)",
				Flags: []cli.Flag{
					policyFlag(),
					&cli.StringFlag{Name: "read", Usage: "explain read_file of PATH"},
					&cli.StringFlag{Name: "write", Usage: "explain write_file of PATH"},
					&cli.StringFlag{Name: "connect", Usage: "explain a connection through the network proxy to HOST:PORT"},
					&cli.BoolFlag{Name: "json", Usage: "print the decision as JSON"},
				},
				Action: func(c *cli.Context) error {
					var a policy.Action
					n := 0
					if c.IsSet("read") {
						a, n = policy.Action{Kind: policy.Read, Path: c.String("read")}, n+1
					}
					if c.IsSet("write") {
						a, n = policy.Action{Kind: policy.Write, Path: c.String("write")}, n+1
					}
					if c.NArg() > 0 {
						a, n = policy.Action{Kind: policy.Command, Command: strings.Join(c.Args().Slice(), " ")}, n+1
					}
					if c.IsSet("connect") {
						n++
					}
					if n != 1 {
						return usageError{errors.New("explain needs exactly one of COMMAND, --read PATH, --write PATH, --connect HOST:PORT")}
					}
					p, err := loadPolicy(c)
					if err != nil {
						return err
					}
					if c.IsSet("connect") {
						nd := p.ExplainConnect(c.String("connect"))
						if c.Bool("json") {
							return policy.WriteNetExplanationJSON(c.App.Writer, nd)
						}
						return p.WriteNetExplanation(c.App.Writer, nd)
					}
					d := p.Decide(a)
					if c.Bool("json") {
						return policy.WriteExplanationJSON(c.App.Writer, d)
					}
					return policy.WriteExplanation(c.App.Writer, d)
				},
			},
		},
	}
}

func policyFlag() cli.Flag {
	return &cli.StringFlag{Name: "policy", Usage: "policy file (default: ./agentbox.yaml if present, else the built-in default)"}
}

// loadPolicy resolves --policy; an invalid policy is a configuration error
// (exit 2) printed one problem per line.
func loadPolicy(c *cli.Context) (*policy.Policy, error) {
	if f, ok := forkedRun(c); ok && f.policy != nil {
		return f.policy, nil // the forked session's, checked by fork
	}
	p, err := policy.Resolve(c.String("policy"))
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("invalid policy; fix it or pass another with --policy:\n%s", strings.Join(policy.LoadErrors(err), "\n")))
	}
	if err := checkTrust(c, p); err != nil {
		return nil, err
	}
	return p, nil
}

// writeScratchNote says how much looser than the built-in default a policy
// written from scratch (extends: none) is: it keeps none of the default's
// protections it does not state itself.
func writeScratchNote(w io.Writer, p *policy.Policy) {
	r := policy.Within(p, policy.Default(), nil)
	n := len(r.Looser) + len(r.Unproven)
	if n == 0 {
		fmt.Fprintln(w, "extends: none, and no looser than the built-in default")
		return
	}
	fmt.Fprintf(w, "extends: none: %d way(s) looser than the built-in default (what the file does not state, the default's protections included, is not kept):\n  %s\n",
		n, strings.Join(looserLines(r, p.Path), "\n  "))
}
