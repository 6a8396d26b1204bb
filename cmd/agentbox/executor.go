package main

import (
	"os"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/executor"
	"github.com/urfave/cli/v2"
)

// executorCommand is the hidden in-container side: the container's main
// process. It is never run on the host by a user.
func executorCommand() *cli.Command {
	return &cli.Command{
		Name:   "executor",
		Hidden: true,
		Usage:  "serve sandbox requests on stdin/stdout (runs inside the container)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "ca-bundle", Hidden: true, Usage: "write the session's CA bundle from " + sandbox.TrustPEMEnv + " at " + sandbox.CABundlePath + " and exit (a kubernetes pod's init container)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("ca-bundle") {
				if err := executor.WriteTrustBundle(); err != nil {
					return exitWith(exitFailed, err)
				}
				return nil
			}
			s := &executor.Server{Version: agentbox.Version, Match: matchFile, LoadJudge: loadJudge}
			if err := s.Serve(os.Stdin, os.Stdout); err != nil {
				return exitWith(exitFailed, err)
			}
			return nil
		},
	}
}

// matchFile lets the executor re-check the path a file request resolves to
// with the same matcher the host's policy uses.
func matchFile(allow, deny []string, rel string, write bool) (bool, string) {
	v, rule, _ := policy.MatchFile(allow, deny, rel, write)
	return v == policy.Deny, rule
}
