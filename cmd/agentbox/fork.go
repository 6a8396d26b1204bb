package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

// forkCommand writes a staged session's workspace as it was after a call
// into a new directory, to start another session from there.
func forkCommand() *cli.Command {
	return &cli.Command{
		Name:      "fork",
		Usage:     "write the workspace of a staged (rw) session as it was right after CALL into DIR (new), to start another session from there (agentbox run --workspace DIR --workspace-mode copy ...)",
		ArgsUsage: "SESSION CALL DIR",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "audit", Usage: "audit log the fork is recorded in (default: $XDG_STATE_HOME/agentbox/audit.jsonl)", EnvVars: []string{"AGENTBOX_AUDIT"}},
			&cli.StringFlag{Name: "audit-key-file", Usage: "HMAC key file for the audit log (else $AGENTBOX_AUDIT_KEY)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 3 {
				return usageError{errors.New("fork needs SESSION, CALL (a call id or checkpoint number; see agentbox changes SESSION) and a new DIR")}
			}
			cp, st, err := loadEndedStage(c.Args().First())
			if err != nil {
				return err
			}
			dst, err := filepath.Abs(c.Args().Get(2))
			if err != nil {
				return exitWith(exitUsage, err)
			}
			log, err := openAuditLog(c, []*policy.Policy{policy.Default()}, []mountedDir{{dir: cp.Workspace}, {dir: dst}})
			if err != nil {
				return err
			}
			defer log.Close()
			call := c.Args().Get(1)
			seq, ferr := st.Fork(call, dst, workspace.DefaultMaxCopyBytes)
			rec := &audit.Record{Event: audit.EventChanges, Session: cp.Session, CallID: call, Workspace: dst,
				Reason: fmt.Sprintf("fork of %s after checkpoint %d", cp.Workspace, seq)}
			if ferr != nil {
				rec.Error = ferr.Error()
			}
			if err := log.Append(rec); err != nil {
				return exitWith(exitFailed, fmt.Errorf("audit log: %w", err))
			}
			if ferr != nil {
				_ = workspace.RemoveTree(dst)
				return exitWith(exitFailed, ferr)
			}
			fmt.Fprintf(c.App.ErrWriter, "%s is the workspace after checkpoint %d of session %s; continue with: agentbox run --workspace %s --workspace-mode copy \"…\"\n", vis(dst), seq, cp.Session, vis(dst))
			return nil
		},
	}
}
