package main

import (
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/otlp"
	"github.com/urfave/cli/v2"
)

// otlpFlags stream the session to an OpenTelemetry collector (run, exec,
// batch, mcp).
func otlpFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "otlp-endpoint", Usage: "stream a trace per session and the audit records as logs to this OTLP collector's base URL (e.g. http://localhost:4318; else $OTEL_EXPORTER_OTLP_ENDPOINT)"},
		&cli.StringFlag{Name: "otlp-protocol", Usage: "http/protobuf (default) or grpc (else $OTEL_EXPORTER_OTLP_PROTOCOL)"},
	}
}

// otlpSink returns the sink the flags or the OTEL_EXPORTER_OTLP_*
// variables ask for, or nil.
func otlpSink(c *cli.Context) (audit.Sink, error) {
	cfg := otlp.Config{Endpoint: c.String("otlp-endpoint"), Protocol: c.String("otlp-protocol")}
	if !cfg.Enabled() {
		return nil, nil
	}
	s, err := otlp.New(c.Context, cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}
