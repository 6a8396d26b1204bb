// Package otlp streams an audit log to an OpenTelemetry collector as it
// is written: a trace per session (session span, model call and tool call
// spans, exec spans with the program's argv, exit code, decision and
// rule) and every record as an OTLP log record, through the OpenTelemetry
// Go SDK and its OTLP exporters (HTTP/protobuf by default, gRPC by
// setting). The spans are derived from the records themselves (a Sink on
// the audit writer), so sessions need no instrumentation. A dead or slow
// collector never slows or fails a session: records go through a bounded
// queue, and what does not fit is dropped and counted (session_end's
// otlp_dropped).
package otlp
