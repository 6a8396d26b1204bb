package main

import (
	"github.com/agentbox/agentbox"
	"github.com/urfave/cli/v2"
)

// showDefaultCommand prints the built-in default policy (a starting point
// for ./agentbox.yaml).
func showDefaultCommand() *cli.Command {
	return &cli.Command{
		Name:  "show-default",
		Usage: "print the built-in default policy (start your own from it: agentbox policy show-default > agentbox.yaml)",
		Action: func(c *cli.Context) error {
			_, err := c.App.Writer.Write(agentbox.DefaultPolicy)
			return err
		},
	}
}
