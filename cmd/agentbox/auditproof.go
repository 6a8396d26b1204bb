package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/proof"
	"github.com/urfave/cli/v2"
)

// auditKeygenCommand: audit keygen NAME --out FILE.
func auditKeygenCommand() *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "make an Ed25519 key pair for signed checkpoints: the signer key goes to --out (mode 0600), the verifier key to stdout (publish it)",
		ArgsUsage: "NAME --out FILE",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "out", Usage: "file for the signer key (created, never overwritten)", Required: true}},
		Action: func(c *cli.Context) error {
			args, err := interspersed(c)
			if err != nil || len(args) != 1 {
				return usageError{errors.New("audit keygen needs one NAME (e.g. audit.example.com), and --out FILE")}
			}
			skey, vkey, err := proof.KeyGen(args[0])
			if err != nil {
				return usageError{fmt.Errorf("audit keygen: %w (a name has no spaces nor '+')", err)}
			}
			f, err := os.OpenFile(c.String("out"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("--out: %w (it is never overwritten)", err))
			}
			if _, err := fmt.Fprintln(f, skey); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, vkey)
			return nil
		},
	}
}

// auditProveCommand: audit prove FILE --line N [--checkpoint C] |
// --consistency OLD NEW.
func auditProveCommand() *cli.Command {
	return &cli.Command{
		Name:      "prove",
		Usage:     "print an inclusion proof of a record (tree size, leaf index, record hash, proof hashes; base64, one per line), or a consistency proof between two tree sizes",
		ArgsUsage: "FILE --line N [--checkpoint C --verify-key K] | FILE --consistency OLD NEW",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "line", Usage: "the record's line (leaf index = line - 1)"},
			&cli.StringFlag{Name: "checkpoint", Usage: "prove against this signed checkpoint's tree size (else the whole log)"},
			&cli.StringFlag{Name: "verify-key", Usage: "verifier key of the checkpoint (or the file holding it)"},
			&cli.BoolFlag{Name: "consistency", Usage: "a consistency proof: give the two tree sizes (or signed checkpoint files) after FILE"},
		},
		Action: func(c *cli.Context) error {
			args, err := interspersed(c)
			if err != nil || len(args) < 1 {
				return usageError{errors.New("audit prove needs FILE (see agentbox audit prove --help)")}
			}
			f, err := os.Open(args[0])
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("opening the audit log: %w", err))
			}
			defer f.Close()
			t, err := proof.ReadTree(f)
			if err != nil {
				return err
			}
			if c.Bool("consistency") {
				if len(args) != 3 {
					return usageError{errors.New("--consistency needs OLD and NEW (tree sizes or checkpoint files) after FILE")}
				}
				var sizes [2]int64
				for i, a := range args[1:] {
					if sizes[i], err = sizeArg(c, a); err != nil {
						return err
					}
				}
				p, err := proof.ProveConsistency(t, sizes[0], sizes[1])
				if err != nil {
					return exitWith(exitFailed, err)
				}
				fmt.Fprint(c.App.Writer, p)
				return nil
			}
			if len(args) != 1 || c.Int64("line") < 1 {
				return usageError{errors.New("audit prove FILE --line N (the record's line, from 1)")}
			}
			size := t.Size()
			if cp := c.String("checkpoint"); cp != "" {
				if size, err = sizeArg(c, cp); err != nil {
					return err
				}
			}
			p, err := proof.ProveInclusion(t, c.Int64("line"), size)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			if cp := c.String("checkpoint"); cp != "" {
				// The proof must hold against the checkpoint as signed.
				chk, err := openCheckpoint(c, cp)
				if err != nil {
					return err
				}
				if err := p.Check(chk); err != nil {
					return exitWith(exitFailed, fmt.Errorf("%w: the log was changed since the checkpoint (run agentbox audit verify)", err))
				}
			}
			fmt.Fprint(c.App.Writer, p)
			return nil
		},
	}
}

// sizeArg is a tree size, or the size of a signed checkpoint file.
func sizeArg(c *cli.Context, a string) (int64, error) {
	if n, err := strconv.ParseInt(a, 10, 64); err == nil {
		return n, nil
	}
	cp, err := openCheckpoint(c, a)
	return cp.Size, err
}

// openCheckpoint reads and checks a signed checkpoint file.
func openCheckpoint(c *cli.Context, file string) (proof.Checkpoint, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return proof.Checkpoint{}, exitWith(exitUsage, fmt.Errorf("checkpoint: %w", err))
	}
	if c.String("verify-key") == "" {
		return proof.Checkpoint{}, usageError{errors.New("--verify-key is needed to trust a signed checkpoint (the key printed by agentbox audit keygen)")}
	}
	vkey, err := proof.ReadKey(c.String("verify-key"))
	if err != nil {
		return proof.Checkpoint{}, usageError{err}
	}
	cp, err := proof.Open(b, vkey)
	if err != nil {
		return cp, exitWith(exitFailed, err)
	}
	return cp, nil
}

// signedCheckpoint writes a signed note for the whole log (refusing a
// damaged one: the checkpoint would vouch for the damage).
func signedCheckpoint(c *cli.Context, f *os.File, key []byte) error {
	rep, err := audit.Verify(f, key, "")
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("reading %s: %w", f.Name(), err))
	}
	if !rep.Intact {
		fmt.Fprint(c.App.ErrWriter, rep.String())
		return exitWith(exitFailed, fmt.Errorf("the log is damaged (%s); a checkpoint would vouch for the damage", rep.First))
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	t, err := proof.ReadTree(f)
	if err != nil {
		return err
	}
	skey, err := proof.ReadKey(c.String("sign-key"))
	if err != nil {
		return usageError{err}
	}
	note, err := proof.Sign(t, t.Size(), c.String("origin"), skey)
	if err != nil {
		return usageError{err}
	}
	_, err = c.App.Writer.Write(note)
	return err
}

// verifySigned checks a signed checkpoint: the log's first N lines hash
// to its root (FILE given), an inclusion proof (--proof), or a
// consistency proof from --old-checkpoint (--proof).
func verifySigned(c *cli.Context, args []string) error {
	cp, err := openCheckpoint(c, c.String("checkpoint"))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "checkpoint: signature valid (%s, %d records, root %s)\n", cp.Origin, cp.Size, cp.Root)
	if pf := c.String("proof"); pf != "" {
		b, err := os.ReadFile(pf)
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--proof: %w", err))
		}
		if old := c.String("old-checkpoint"); old != "" {
			oc, err := openCheckpoint(c, old)
			if err != nil {
				return err
			}
			p, err := proof.ParseConsistency(string(b))
			if err != nil {
				return usageError{err}
			}
			if err := p.Check(oc, cp); err != nil {
				return exitWith(exitFailed, err)
			}
			fmt.Fprintf(c.App.Writer, "consistency proof valid: the log of %d records extends the one of %d\n", cp.Size, oc.Size)
		} else {
			p, err := proof.ParseInclusion(string(b))
			if err != nil {
				return usageError{err}
			}
			if err := p.Check(cp); err != nil {
				return exitWith(exitFailed, err)
			}
			fmt.Fprintf(c.App.Writer, "inclusion proof valid: record %s is line %d of the checkpointed log\n", p.Leaf, p.Index+1)
		}
	}
	if len(args) == 0 {
		return nil
	}
	f, err := os.Open(args[0])
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("opening the audit log: %w", err))
	}
	defer f.Close()
	t, err := proof.ReadTree(f)
	if err != nil {
		return err
	}
	root, err := t.Root(cp.Size)
	if err != nil || root != cp.Root {
		if err == nil {
			err = fmt.Errorf("its first %d lines no longer hash to the checkpoint's root: the log was changed since", cp.Size)
		}
		fmt.Fprintf(c.App.Writer, "NOT extended: %v\n", err)
		return errNotExtended // the line-level report follows (audit verify)
	}
	fmt.Fprintf(c.App.Writer, "extended: the log's first %d of %d lines hash to the checkpoint's root\n", cp.Size, t.Size())
	return nil
}

// errNotExtended: the log does not extend the signed checkpoint; verify
// still gives its line-level report of the damage, then exits 1.
var errNotExtended = errors.New("the log does not extend the checkpoint")
