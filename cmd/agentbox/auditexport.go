package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/audit/ocsf"
	"github.com/urfave/cli/v2"
)

// auditExportCommand: audit export FILE --format ocsf.
func auditExportCommand(fileArg func(*cli.Context) (*os.File, error)) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write every record of the log as an OCSF " + ocsf.Version + " event, one per line (for a SIEM); a tool call is one event",
		ArgsUsage: "FILE --format ocsf",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "format", Value: "ocsf", Usage: "ocsf (the only format)"}},
		Action: func(c *cli.Context) error {
			f, err := fileArg(c)
			if err != nil {
				return err
			}
			defer f.Close()
			if format := c.String("format"); format != "ocsf" {
				return usageError{fmt.Errorf("--format %q: the only format is ocsf", format)}
			}
			st, err := ocsf.Export(c.App.Writer, f)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "exported %d events (%d calls without a recorded result; %d unreadable lines)\n", st.Events, st.Unfinished, st.Unreadable)
			if st.Unreadable > 0 {
				fmt.Fprintf(c.App.ErrWriter, "run: agentbox audit verify %s\n", f.Name())
			}
			return nil
		},
	}
}
