package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/agent"
	"github.com/urfave/cli/v2"
)

// memoryCommand: memory show|clear [--workspace DIR].
func memoryCommand() *cli.Command {
	wsFlag := &cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Value: ".", Usage: "the workspace whose memory of past runs to use"}
	open := func(c *cli.Context) (agent.Memory, error) {
		if fi, err := os.Stat(c.String("workspace")); err != nil || !fi.IsDir() {
			return agent.Memory{}, exitWith(exitUsage, fmt.Errorf("--workspace %s: not a directory", c.String("workspace")))
		}
		p, err := agent.DefaultMemoryPath(os.Getenv, c.String("workspace"))
		if err != nil {
			return agent.Memory{}, exitWith(exitUsage, err)
		}
		return agent.Memory{Path: p}, nil
	}
	return &cli.Command{
		Name:  "memory",
		Usage: "show or clear a workspace's memory of past runs (it goes into later system prompts, fenced as untrusted)",
		Subcommands: []*cli.Command{
			{
				Name:  "show",
				Usage: "the past runs remembered for the workspace, oldest first",
				Flags: []cli.Flag{wsFlag, &cli.BoolFlag{Name: "json", Usage: "JSON Lines"}},
				Action: func(c *cli.Context) error {
					m, err := open(c)
					if err != nil {
						return err
					}
					entries, err := m.Recent(1 << 20)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						for _, e := range entries {
							if err := enc.Encode(e); err != nil {
								return err
							}
						}
						return nil
					}
					if len(entries) == 0 {
						fmt.Fprintf(c.App.Writer, "no memory for this workspace (%s)\n", m.Path)
						return nil
					}
					fmt.Fprintf(c.App.Writer, "%s (the last %d go into the next run's system prompt)\n", m.Path, agent.DefaultMemoryLines)
					fmt.Fprint(c.App.Writer, agent.MemoryBlock(entries))
					return nil
				},
			},
			{
				Name:  "clear",
				Usage: "forget the workspace's past runs",
				Flags: []cli.Flag{wsFlag},
				Action: func(c *cli.Context) error {
					m, err := open(c)
					if err != nil {
						return err
					}
					if err := m.Clear(); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "cleared %s\n", m.Path)
					return nil
				},
			},
		},
	}
}
