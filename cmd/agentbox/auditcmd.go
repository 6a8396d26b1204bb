package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
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
			auditVerifyCommand(fileArg),
			auditCheckpointCommand(fileArg),
			auditKeygenCommand(),
			auditProveCommand(),
			auditExportCommand(fileArg),
			auditServeCommand(),
			{
				Name:      "show",
				Usage:     "a readable timeline (or JSON Lines with --json)",
				ArgsUsage: "FILE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "session", Usage: "session id or prefix"},
					&cli.StringFlag{Name: "tool", Usage: "execute_bash | read_file | write_file"},
					&cli.StringFlag{Name: "decision", Usage: "allow | ask | deny"},
					&cli.StringFlag{Name: "since", Usage: "records at or after: a duration ago (24h, 2d, 1w), a date (2026-11-29) or an RFC 3339 time"},
					&cli.StringFlag{Name: "until", Usage: "records before: a duration ago, a date or an RFC 3339 time"},
					&cli.StringFlag{Name: "grep", Usage: "substring of the record"},
					&cli.BoolFlag{Name: "json", Usage: "JSON Lines, exactly as stored"},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing records as they are appended (Ctrl-C stops)"},
				},
				Action: func(c *cli.Context) error {
					f, err := fileArg(c)
					if err != nil {
						return err
					}
					defer f.Close()
					if err := checkDecision(c.String("decision")); err != nil {
						return usageError{fmt.Errorf("--decision: %w", err)}
					}
					since, err := parseWhen(c.String("since"))
					if err != nil {
						return usageError{fmt.Errorf("--since: %w", err)}
					}
					until, err := parseWhen(c.String("until"))
					if err != nil {
						return usageError{fmt.Errorf("--until: %w", err)}
					}
					filter := audit.Filter{Session: c.String("session"), Tool: c.String("tool"), Decision: c.String("decision"), Grep: c.String("grep"), Since: since, Until: until}
					if c.Bool("follow") {
						return audit.Follow(c.Context, c.App.Writer, f.Name(), filter, audit.ShowOptions{JSON: c.Bool("json"), Color: colorOn(c.App.Writer)}, 0)
					}
					return audit.Show(c.App.Writer, f, filter, audit.ShowOptions{JSON: c.Bool("json"), Color: colorOn(c.App.Writer)})
				},
			},
			{
				Name:      "stats",
				Usage:     "counts per session, tool, decision, day and rule; top denials; failures; time span",
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

// parseWhen accepts "" (unset), a duration ago ("24h", "90m", "2d",
// "1w"), an RFC 3339 time, or a plain date or date and time (local time:
// "2026-11-29", "2026-11-29 18:00").
func parseWhen(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := parseAgo(s); err == nil {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a duration ago like 24h or 2d, a date like 2026-11-29, or a time like 2026-11-29T18:00:00Z", s)
}

// parseAgo is time.ParseDuration plus days (d) and weeks (w) as a whole
// number: "2d", "1w".
func parseAgo(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				return 0, errors.New("not a whole number of " + suffix)
			}
			return time.Duration(v) * unit, nil
		}
	}
	return time.ParseDuration(s)
}

// decisions are the values --decision takes.
var decisions = []string{"allow", "ask", "deny", audit.DecisionWouldAsk, audit.DecisionWouldDeny}

// checkDecision refuses a --decision value no record carries.
func checkDecision(s string) error {
	if s == "" || slices.Contains(decisions, strings.ToLower(s)) {
		return nil
	}
	return fmt.Errorf("%q is not a decision; use one of %s", s, strings.Join(decisions, ", "))
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
