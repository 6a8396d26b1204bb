package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/audit/ocsf"
	"github.com/agentbox/agentbox/audit/otlp"
	"github.com/urfave/cli/v2"
)

// auditExportCommand: audit export FILE --format ocsf.
func auditExportCommand(fileArg func(*cli.Context) (*os.File, error)) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write every record of the log as an OCSF " + ocsf.Version + " event, one per line (for a SIEM; a tool call is one event), or send it to an OpenTelemetry collector (--format otlp)",
		ArgsUsage: "FILE [--format ocsf | --format otlp --endpoint URL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "ocsf", Usage: "ocsf (one event per line on stdout) or otlp (traces and logs to --endpoint)"},
			&cli.StringFlag{Name: "endpoint", Usage: "with --format otlp: the collector's base URL (else $OTEL_EXPORTER_OTLP_ENDPOINT)"},
			&cli.StringFlag{Name: "protocol", Usage: "with --format otlp: http/protobuf (default) or grpc"},
		},
		Action: func(c *cli.Context) error {
			f, err := fileArg(c)
			if err != nil {
				return err
			}
			defer f.Close()
			switch format := c.String("format"); format {
			case "otlp":
				cfg := otlp.Config{Endpoint: c.String("endpoint"), Protocol: c.String("protocol")}
				if !cfg.Enabled() {
					return usageError{fmt.Errorf("--format otlp needs --endpoint URL (or $OTEL_EXPORTER_OTLP_ENDPOINT)")}
				}
				n, err := otlp.Export(c.Context, cfg, f)
				if err != nil {
					return exitWith(exitFailed, fmt.Errorf("sent %d records; the collector: %w", n, err))
				}
				fmt.Fprintf(c.App.ErrWriter, "sent %d records as spans and logs\n", n)
				return nil
			case "ocsf":
			default:
				return usageError{fmt.Errorf("--format %q: want ocsf or otlp", format)}
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
