package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

// rewindCommand restores a staged session's workspace to before a call.
func rewindCommand() *cli.Command {
	return &cli.Command{
		Name:      "rewind",
		Usage:     "restore the workspace to before a call of a staged (rw) session: every later change is undone (nothing is, if the workspace changed there since)",
		ArgsUsage: "SESSION [STEP|CALL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "audit", Usage: "audit log the rewind is recorded in (default: $XDG_STATE_HOME/agentbox/audit.jsonl)", EnvVars: []string{"AGENTBOX_AUDIT"}},
			&cli.StringFlag{Name: "audit-key-file", Usage: "HMAC key file for the audit log (else $AGENTBOX_AUDIT_KEY)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usageError{errors.New("rewind needs SESSION and optionally CALL (the step number the run printed, [6/30] is 6, or a call id; default: the last call); see agentbox changes SESSION")}
			}
			cp, st, err := loadEndedStage(c.Args().First())
			if err != nil {
				return err
			}
			log, err := openAuditLog(c, []*policy.Policy{policy.Default()}, []mountedDir{{dir: cp.Workspace}})
			if err != nil {
				return err
			}
			defer log.Close()
			call, said, err := resolveStep(c, cp.Session, st, c.Args().Get(1), false)
			if err != nil {
				return err
			}
			res, rerr := st.Rewind(call)
			rec := &audit.Record{Event: audit.EventChanges, Session: cp.Session, CallID: call, Reason: "rewind", Workspace: cp.Workspace}
			if res != nil {
				rec.Reason = fmt.Sprintf("rewind to before checkpoint %d", res.To)
				for _, p := range res.Restored {
					rec.Files = append(rec.Files, audit.FileChange{Path: p, Change: "restored"})
				}
			}
			if rerr != nil {
				rec.Error = rerr.Error()
			}
			if err := log.Append(rec); err != nil {
				return exitWith(exitFailed, fmt.Errorf("audit log: %w", err))
			}
			if rerr != nil {
				return exitWith(exitFailed, rerr)
			}
			if said != "" {
				said = ", " + vis(said)
			}
			fmt.Fprintf(c.App.ErrWriter, "restored %s in %s to before checkpoint %d%s\n", plural(len(res.Restored), "path"), textutil.OneLine(policy.Visible(cp.Workspace), 200), res.To, said)
			return nil
		},
	}
}

// statStaged shows a staged session's checkpoints, or its held changes.
func statStaged(w io.Writer, cp *workspace.Copy, held bool) error {
	cps, err := workspace.LoadCheckpoints(cp.StageDir())
	if err != nil {
		return exitWith(exitFailed, err)
	}
	pend, err := workspace.Pending(cp.StageDir())
	if err != nil {
		return exitWith(exitFailed, err)
	}
	fmt.Fprintf(w, "session %s (%s) on %s: %s\n", cp.Session, cp.State, vis(cp.Workspace), plural(len(cps), "checkpoint"))
	if pend != nil {
		fmt.Fprintf(w, "  PENDING promotion of checkpoint %d (call %s) was interrupted: each file is either before or after; these were listed:\n", pend.Seq, vis(pend.CallID))
		for _, c := range pend.Changes {
			fmt.Fprintf(w, "    %-8s %s\n", c.Change, qpath(c.Path))
		}
	}
	for _, k := range cps {
		if !held {
			fmt.Fprintf(w, "  checkpoint %d  call %s  %d promoted, %d held\n", k.Seq, vis(k.CallID), len(k.Promoted()), len(k.HeldChanges()))
			for _, c := range k.Promoted() {
				fmt.Fprintf(w, "    %-8s %s\n", c.Change, qpath(c.Path))
			}
			continue
		}
		for _, c := range k.HeldChanges() {
			fmt.Fprintf(w, "  HELD %-8s %s  (call %s, rule %s: %s)\n", c.Change, qpath(c.Path), vis(k.CallID), c.Held, vis(c.Why))
		}
	}
	if held {
		fmt.Fprintf(w, "held content is kept under %s (never promoted)\n", vis(cp.StageDir()+"/held"))
	}
	return nil
}

// vis makes agent-controlled text safe for the terminal.
func vis(s string) string { return textutil.OneLine(policy.Visible(s), 300) }

// loadEndedStage loads the staged workspace of a session that has ended
// (rewind and fork refuse a live one).
func loadEndedStage(session string) (*workspace.Copy, *workspace.Stage, error) {
	store, err := copyStore()
	if err != nil {
		return nil, nil, err
	}
	cp, st, err := workspace.LoadStage(store, session)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	if cp.State == workspace.StateLive {
		return nil, nil, exitWith(exitFailed, fmt.Errorf("session %s is still running (or was killed): end it first", cp.Session))
	}
	if cps, err := st.Checkpoints(); err == nil && len(cps) > 0 && cps[0].Kept {
		return nil, nil, exitWith(exitUsage, fmt.Errorf("session %s worked on a copy: nothing of it reached the workspace; review it with agentbox changes, then apply or discard it", cp.Session))
	}
	return cp, st, nil
}

// qpath prints a workspace path unambiguously, quoted as git quotes it
// (a newline, a control character or a non-ASCII byte in C style); the
// exact bytes are in changes.patch.
func qpath(p string) string { return textutil.OneLine(workspace.QuotePath(p), 300) }
