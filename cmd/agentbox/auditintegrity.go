package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/proof"
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
			&cli.StringFlag{Name: "verify-key", Usage: "verifier key of a signed --checkpoint (or the file holding it)"},
			&cli.StringFlag{Name: "proof", Usage: "with a signed --checkpoint: check this proof from 'agentbox audit prove' (FILE not needed)"},
			&cli.StringFlag{Name: "old-checkpoint", Usage: "with --proof: the proof is a consistency proof from this older signed checkpoint"},
		},
		Action: func(c *cli.Context) error {
			notExtended := false
			if s := c.String("checkpoint"); s != "" {
				if b, err := os.ReadFile(s); err == nil && proof.IsNote(b) {
					args, err := interspersed(c)
					if err != nil || len(args) > 1 {
						return usageError{errors.New("audit verify [FILE] --checkpoint C --verify-key K [--proof P [--old-checkpoint C0]]")}
					}
					if err := verifySigned(c, args); errors.Is(err, errNotExtended) {
						notExtended = true
					} else if err != nil || len(args) == 0 {
						return err
					}
				}
			}
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
			if b, err := os.ReadFile(c.String("checkpoint")); err == nil && proof.IsNote(b) {
				// checked above; the chain is verified below
			} else if s := c.String("checkpoint"); s != "" {
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
			if !rep.Intact || notExtended {
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
		Usage:     "print a checkpoint to keep elsewhere: with --sign-key a C2SP signed note (tree size and RFC 6962 root of the log's lines) anyone can check; else lines, head and time (HMAC-signed with the audit key); verify --checkpoint proves the log still extends it",
		ArgsUsage: "FILE [--sign-key KEY [--origin NAME]]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key-file", Usage: "HMAC key file (else $AGENTBOX_AUDIT_KEY)"},
			&cli.StringFlag{Name: "sign-key", Usage: "signer key from 'agentbox audit keygen' (or the file holding it): write a signed note"},
			&cli.StringFlag{Name: "origin", Usage: "the checkpoint's origin line (default: the key's name)"},
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
			if c.String("sign-key") != "" {
				return signedCheckpoint(c, f, key)
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
