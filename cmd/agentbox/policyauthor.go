package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

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

func policySuggestCommand() *cli.Command {
	return &cli.Command{
		Name:      "suggest",
		Usage:     "write the least policy within a base that allows what the audit logs' calls did (only calls that ran), each rule commented with the lines behind it",
		ArgsUsage: "LOG... [--base POLICY] [--session ID] [--since TIME] [-o FILE]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base", Value: "default", Usage: "the policy to layer on: its settings and refusals are kept, and the suggestion stays within it (\"default\": the built-in)"},
			&cli.StringSliceFlag{Name: "session", Usage: "learn only from this session (repeatable)"},
			&cli.StringFlag{Name: "since", Usage: "learn only from what was recorded at or after TIME (RFC 3339, like 2026-01-02T15:04:05Z, or a duration before now, like 24h)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the policy to FILE (default: stdout)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageError{errors.New("policy suggest needs at least one audit LOG (from agentbox run --learn, or any run)")}
			}
			since, err := sinceFlag(c.String("since"), time.Now())
			if err != nil {
				return err
			}
			base, err := loadNamedPolicy(c.String("base"))
			if err != nil {
				return err
			}
			probes, err := logProbes(c.Args().Slice())
			if err != nil {
				return err
			}
			probes = filterProbes(probes, c.StringSlice("session"), since)
			s := policy.Suggest(base, probes)
			var b strings.Builder
			if err := s.WriteYAML(&b, c.Args().Slice()); err != nil {
				return err
			}
			sugg, err := policy.Parse("suggested policy", []byte(b.String()))
			if err != nil {
				return fmt.Errorf("the suggested policy does not load (a bug; please report it): %w", err)
			}
			if r := policy.Within(sugg, base, probes); !r.Holds() {
				var why []string
				for _, f := range r.Looser {
					why = append(why, policy.Visible(f.String()))
				}
				for _, f := range r.Unproven {
					why = append(why, "not proven: "+policy.Visible(f.String()))
				}
				return exitWith(exitFailed, fmt.Errorf("the suggested policy would not stay within %s, so it is not written (a bug; please report it). What is looser:\n  %s",
					base.Describe(), strings.Join(why, "\n  ")))
			}
			if out := c.String("output"); out != "" {
				if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
					return exitWith(exitUsage, fmt.Errorf("write the suggested policy: %w", err))
				}
				fmt.Fprintf(c.App.ErrWriter, "wrote %s: %d command rules, %d read and %d write globs, %d hosts from %d recorded actions\n",
					out, len(s.Allow), len(s.Reads), len(s.Writes), len(s.Hosts), len(probes))
			} else if _, err := io.WriteString(c.App.Writer, b.String()); err != nil {
				return err
			}
			if n := len(s.Decision); n > 0 {
				fmt.Fprintf(c.App.ErrWriter, "%d recorded action(s) need your decision (the base refuses or asks about them); listed at the end of the policy\n", n)
			}
			return nil
		},
	}
}

// sinceFlag parses --since: an RFC 3339 time, or a duration before now.
func sinceFlag(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageError{fmt.Errorf("--since %q: give a time like 2026-01-02T15:04:05Z or a duration like 24h", s)}
}

// filterProbes keeps the probes of the given sessions (all when none)
// recorded at or after since (all when zero).
func filterProbes(ps []policy.Probe, sessions []string, since time.Time) []policy.Probe {
	var out []policy.Probe
	for _, p := range ps {
		if len(sessions) > 0 && !slices.Contains(sessions, p.Session) {
			continue
		}
		if !since.IsZero() && p.Time.Before(since) {
			continue
		}
		out = append(out, p)
	}
	return out
}
