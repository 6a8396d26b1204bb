package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v2"
)

// loadNamedPolicy loads a policy named on the command line: "default" is
// the built-in default. An invalid file is a configuration error.
func loadNamedPolicy(name string) (*policy.Policy, error) {
	if name == "default" || name == "built-in" {
		return policy.Default(), nil
	}
	p, err := policy.Load(name)
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("invalid policy %s; fix it or name another (\"default\" is the built-in):\n%s", name, strings.Join(policy.LoadErrors(err), "\n")))
	}
	return p, nil
}

func logFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "log", Usage: "also decide the calls, changed files and connections of this audit log (repeatable)"}
}

// logProbes reads the --log audit logs as probes.
func logProbes(names []string) ([]policy.Probe, error) {
	var out []policy.Probe
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return nil, exitWith(exitUsage, fmt.Errorf("audit log: %w (check the --log path)", err))
		}
		ps, err := agent.LogProbes(f, n)
		f.Close()
		if err != nil {
			return nil, exitWith(exitUsage, err)
		}
		out = append(out, ps...)
	}
	return out, nil
}

// checkWithin is `policy check NEW --within BOUNDARY`: exit 0 when NEW is
// proven to stay within BOUNDARY, 1 with the counterexamples otherwise.
func checkWithin(c *cli.Context, newName string) error {
	if newName == "" {
		return usageError{errors.New("policy check --within needs the policy to check: policy check NEW --within BOUNDARY")}
	}
	n, err := loadNamedPolicy(newName)
	if err != nil {
		return err
	}
	b, err := loadNamedPolicy(c.String("within"))
	if err != nil {
		return err
	}
	probes, err := logProbes(c.StringSlice("log"))
	if err != nil {
		return err
	}
	r := policy.Within(n, b, probes)
	if c.Bool("json") {
		err = policy.WriteJSON(c.App.Writer, struct {
			New      string `json:"new"`
			Boundary string `json:"boundary"`
			Holds    bool   `json:"holds"`
			policy.Report
		}{n.Describe(), b.Describe(), r.Holds(), r})
	} else {
		err = r.WriteText(c.App.Writer, n.Describe(), b.Describe())
	}
	if err != nil {
		return err
	}
	if !r.Holds() {
		return exitWith(exitFailed, nil)
	}
	return nil
}

func policyDiffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "what NEW decides differently from OLD, looser and stricter, with concrete examples (exit 1 if anything differs)",
		ArgsUsage: "OLD NEW   (\"default\" names the built-in policy)",
		Flags:     []cli.Flag{logFlag(), &cli.BoolFlag{Name: "json", Usage: "print the differences as JSON"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageError{errors.New("policy diff takes OLD and NEW (\"default\" is the built-in policy)")}
			}
			old, err := loadNamedPolicy(c.Args().Get(0))
			if err != nil {
				return err
			}
			nw, err := loadNamedPolicy(c.Args().Get(1))
			if err != nil {
				return err
			}
			probes, err := logProbes(c.StringSlice("log"))
			if err != nil {
				return err
			}
			d := policy.Diff(old, nw, probes)
			if c.Bool("json") {
				err = policy.WriteJSON(c.App.Writer, d)
			} else {
				err = d.WriteText(c.App.Writer)
			}
			if err != nil {
				return err
			}
			if !d.Same() {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
}
