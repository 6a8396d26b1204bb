package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/audit"
	"github.com/urfave/cli/v2"
)

// auditExportCommand: audit export FILE --format ocsf.
func auditExportCommand(fileArg func(*cli.Context) (*os.File, error)) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write the log's tool calls and egress attempts as OCSF " + audit.OCSFVersion + " events, one per line (for a SIEM)",
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
			st, err := audit.ExportOCSF(c.App.Writer, f)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "exported %d events (%d records have no OCSF class here; %d unreadable lines)\n", st.Events, st.Skipped, st.Unreadable)
			if st.Unreadable > 0 {
				fmt.Fprintf(c.App.ErrWriter, "run: agentbox audit verify %s\n", f.Name())
			}
			return nil
		},
	}
}
