package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/urfave/cli/v2"
)

func auditCommand() *cli.Command {
	// fileArg opens the one FILE argument; flags may follow it.
	fileArg := func(c *cli.Context) (*os.File, error) {
		args, err := interspersed(c)
		if err != nil {
			return nil, usageError{fmt.Errorf("%w (see agentbox audit %s --help)", err, c.Command.Name)}
		}
		if len(args) != 1 {
			return nil, usageError{fmt.Errorf("audit %s needs one FILE (the default log is %s)", c.Command.Name, defaultAuditPath())}
		}
		f, err := os.Open(args[0])
		if err != nil {
			return nil, exitWith(exitUsage, fmt.Errorf("opening the audit log: %w", err))
		}
		return f, nil
	}
	return &cli.Command{
		Name:  "audit",
		Usage: "verify and query audit logs",
		Subcommands: []*cli.Command{
			{
				Name:      "verify",
				Usage:     "check the hash chain (and the MAC, with a key); exit 1 on any damage",
				ArgsUsage: "FILE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "key-file", Usage: "HMAC key file (else $AGENTBOX_AUDIT_KEY)"},
					&cli.StringFlag{Name: "expect-head", Usage: "head hash recorded earlier; detects a cut-off tail"},
				},
				Action: func(c *cli.Context) error {
					f, err := fileArg(c)
					if err != nil {
						return err
					}
					defer f.Close()
					key, err := audit.KeyFromEnv(c.String("key-file"))
					if err != nil {
						return exitWith(exitUsage, err)
					}
					rep, err := audit.Verify(f, key, c.String("expect-head"))
					if err != nil {
						return exitWith(exitFailed, fmt.Errorf("reading %s: %w", f.Name(), err))
					}
					fmt.Fprint(c.App.Writer, rep.String())
					if !rep.Intact {
						return exitWith(exitFailed, nil)
					}
					return nil
				},
			},
			{
				Name:      "show",
				Usage:     "a readable timeline (or JSON Lines with --json)",
				ArgsUsage: "FILE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "session", Usage: "session id or prefix"},
					&cli.StringFlag{Name: "tool", Usage: "execute_bash | read_file | write_file"},
					&cli.StringFlag{Name: "decision", Usage: "allow | ask | deny"},
					&cli.StringFlag{Name: "since", Usage: "records at or after: a duration ago (24h) or an RFC 3339 time"},
					&cli.StringFlag{Name: "until", Usage: "records before: a duration ago or an RFC 3339 time"},
					&cli.StringFlag{Name: "grep", Usage: "substring of the record"},
					&cli.BoolFlag{Name: "json", Usage: "JSON Lines, exactly as stored"},
				},
				Action: func(c *cli.Context) error {
					f, err := fileArg(c)
					if err != nil {
						return err
					}
					defer f.Close()
					since, err := parseWhen(c.String("since"))
					if err != nil {
						return usageError{fmt.Errorf("--since: %w", err)}
					}
					until, err := parseWhen(c.String("until"))
					if err != nil {
						return usageError{fmt.Errorf("--until: %w", err)}
					}
					filter := audit.Filter{Session: c.String("session"), Tool: c.String("tool"), Decision: c.String("decision"), Grep: c.String("grep"), Since: since, Until: until}
					return audit.Show(c.App.Writer, f, filter, audit.ShowOptions{JSON: c.Bool("json"), Color: colorOn(c.App.Writer)})
				},
			},
			{
				Name:      "stats",
				Usage:     "counts per session, tool and decision; top denials; failures; time span",
				ArgsUsage: "FILE",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "json"}},
				Action: func(c *cli.Context) error {
					f, err := fileArg(c)
					if err != nil {
						return err
					}
					defer f.Close()
					st, err := audit.ComputeStats(f)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return st.WriteJSON(c.App.Writer)
					}
					return st.WriteText(c.App.Writer)
				},
			},
			{
				Name:      "replay",
				Usage:     "which recorded calls a NEW policy would decide differently (exit 1 if any)",
				ArgsUsage: "FILE --policy NEW",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "policy", Usage: "the policy to re-decide with (required)"}, &cli.BoolFlag{Name: "json"}},
				Action: func(c *cli.Context) error {
					f, err := fileArg(c)
					if err != nil {
						return err
					}
					defer f.Close()
					if !c.IsSet("policy") {
						return usageError{errors.New("audit replay needs --policy NEW: the policy to re-decide the recorded calls with")}
					}
					p, err := loadPolicy(c)
					if err != nil {
						return err
					}
					ch, err := audit.Replay(f, agent.ReplayDecider{Policy: p})
					if err != nil {
						return err
					}
					if err := audit.WriteChanges(c.App.Writer, ch, c.Bool("json")); err != nil {
						return err
					}
					if len(ch) > 0 {
						return exitWith(exitFailed, nil)
					}
					return nil
				},
			},
		},
	}
}

// parseWhen accepts "" (unset), a duration ago ("24h") or an RFC 3339 time.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("want a duration like 24h or a time like 2026-11-29T18:00:00Z")
}

func defaultAuditPath() string {
	p, err := audit.DefaultPath()
	if err != nil {
		return "$XDG_STATE_HOME/agentbox/audit.jsonl"
	}
	return p
}

// colorOn: colours only on a terminal and never with NO_COLOR.
func colorOn(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
