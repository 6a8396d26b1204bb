package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocols.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultQueue is Config.Queue when zero.
const DefaultQueue = 4096

// Config says where and how to send.
type Config struct {
	// Endpoint is the collector's base URL (http://host:4318 for
	// HTTP, http://host:4317 for gRPC), as OTEL_EXPORTER_OTLP_ENDPOINT;
	// "" uses the OTEL_EXPORTER_OTLP_* variables.
	Endpoint string
	// Protocol is http/protobuf (default) or grpc; "" reads
	// OTEL_EXPORTER_OTLP_PROTOCOL.
	Protocol string
	// Queue bounds the records waiting to be turned into spans and logs.
	Queue int
	// Block makes Record wait for room instead of dropping (audit export
	// of an existing log; never for a live session).
	Block bool
	// Timeout bounds one export and the final flush (default 3s).
	Timeout time.Duration
	// Batch is how many log records go in one export (default 512).
	Batch int
}

// Enabled reports whether cfg or the environment names a collector.
func (cfg Config) Enabled() bool {
	if cfg.Endpoint != "" {
		return true
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

func (cfg Config) protocol() (string, error) {
	p := cfg.Protocol
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("otlp: protocol %q: want http/protobuf or grpc", p)
}

// exporters builds the span and log exporters. Retries are off: a
// collector that is down loses the batch instead of holding the queue.
func (cfg Config) exporters(ctx context.Context) (sdktrace.SpanExporter, sdklog.Exporter, error) {
	proto, err := cfg.protocol()
	if err != nil {
		return nil, nil, err
	}
	timeout := cfg.timeout()
	base := strings.TrimRight(cfg.Endpoint, "/")
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, nil, fmt.Errorf("otlp: endpoint %q: want a URL such as http://localhost:4318", cfg.Endpoint)
		}
	}
	if proto == ProtocolGRPC {
		topts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(timeout), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
		lopts := []otlploggrpc.Option{otlploggrpc.WithTimeout(timeout), otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
		if base != "" {
			topts = append(topts, otlptracegrpc.WithEndpointURL(base))
			lopts = append(lopts, otlploggrpc.WithEndpointURL(base))
		}
		te, err := otlptracegrpc.New(ctx, topts...)
		if err != nil {
			return nil, nil, fmt.Errorf("otlp: %w", err)
		}
		le, err := otlploggrpc.New(ctx, lopts...)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("otlp: %w", err), te.Shutdown(ctx))
		}
		return te, le, nil
	}
	topts := []otlptracehttp.Option{otlptracehttp.WithTimeout(timeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
	lopts := []otlploghttp.Option{otlploghttp.WithTimeout(timeout), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
	if base != "" {
		topts = append(topts, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
		lopts = append(lopts, otlploghttp.WithEndpointURL(base+"/v1/logs"))
	}
	te, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, nil, fmt.Errorf("otlp: %w", err)
	}
	le, err := otlploghttp.New(ctx, lopts...)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("otlp: %w", err), te.Shutdown(ctx))
	}
	return te, le, nil
}

func (cfg Config) timeout() time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return 3 * time.Second
}
