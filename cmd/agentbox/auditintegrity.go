package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/urfave/cli/v2"
)

// auditVerifyCommand: audit verify FILE [--json] [--expect-head H]
// [--checkpoint FILE|STRING].
func auditVerifyCommand(fileArg func(*cli.Context) (*os.File, error)) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check the hash chain (and the MAC, with a key); list every damaged line; exit 1 on any damage",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key-file", Usage: "HMAC key file (else $AGENTBOX_AUDIT_KEY)"},
			&cli.StringFlag{Name: "expect-head", Usage: "head hash recorded earlier; detects a cut-off tail"},
			&cli.StringFlag{Name: "checkpoint", Usage: "a checkpoint from 'agentbox audit checkpoint' (the file holding it, or the line itself): prove the log still extends it"},
			&cli.BoolFlag{Name: "json", Usage: "the full report as JSON (every damaged line)"},
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
			opts := audit.VerifyOptions{Key: key, ExpectHead: c.String("expect-head")}
			if s := c.String("checkpoint"); s != "" {
				cp, err := readCheckpoint(s)
				if err != nil {
					return exitWith(exitUsage, err)
				}
				opts.Checkpoint = &cp
			}
			rep, err := audit.VerifyWith(f, opts)
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("reading %s: %w", f.Name(), err))
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprint(c.App.Writer, rep.String())
			}
			if !rep.Intact {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
}

// auditCheckpointCommand: audit checkpoint FILE prints a checkpoint line.
func auditCheckpointCommand(fileArg func(*cli.Context) (*os.File, error)) *cli.Command {
	return &cli.Command{
		Name:      "checkpoint",
		Usage:     "print a checkpoint (lines, head, time; signed with the key when set) to keep elsewhere; verify --checkpoint proves the log still extends it",
		ArgsUsage: "FILE",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "key-file", Usage: "HMAC key file (else $AGENTBOX_AUDIT_KEY)"}},
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
			rep, err := audit.Verify(f, key, "")
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("reading %s: %w", f.Name(), err))
			}
			cp, err := audit.NewCheckpoint(rep, key, time.Now())
			if err != nil {
				fmt.Fprint(c.App.ErrWriter, rep.String())
				return exitWith(exitFailed, err)
			}
			fmt.Fprintln(c.App.Writer, cp.String())
			if cp.MAC == "" {
				fmt.Fprintf(c.App.ErrWriter, "note: unsigned (no key): store it where the log's writers cannot change it\n")
			}
			return nil
		},
	}
}

// readCheckpoint takes the checkpoint line itself or a file holding it.
func readCheckpoint(s string) (audit.Checkpoint, error) {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		b, err := os.ReadFile(s)
		if err != nil {
			return audit.Checkpoint{}, fmt.Errorf("--checkpoint: %w (give the file holding the checkpoint, or the line itself)", err)
		}
		s = string(b)
	}
	cp, err := audit.ParseCheckpoint(s)
	if err != nil {
		return cp, fmt.Errorf("--checkpoint: %w", err)
	}
	return cp, nil
}
