package otlp_test

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/otlp"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// grpcReceiver is a minimal OTLP/gRPC receiver on the official service
// definitions.
type grpcReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	collogs.UnimplementedLogsServiceServer
	mu          sync.Mutex
	spans, logs int
	names       map[string]bool
}

func (g *grpcReceiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.spans++
				g.names[s.Name] = true
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type grpcLogs struct{ *grpcReceiver }

func (g grpcLogs) Export(_ context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			g.logs += len(sl.LogRecords)
		}
	}
	return &collogs.ExportLogsServiceResponse{}, nil
}

// --otlp-protocol grpc: the same spans and logs over OTLP/gRPC.
func TestSinkGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rcv := &grpcReceiver{names: map[string]bool{}}
	coltrace.RegisterTraceServiceServer(srv, rcv)
	collogs.RegisterLogsServiceServer(srv, grpcLogs{rcv})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	sink, err := otlp.New(context.Background(), otlp.Config{Endpoint: "http://" + ln.Addr().String(), Protocol: otlp.ProtocolGRPC})
	if err != nil {
		t.Fatal(err)
	}
	w, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	n := writeSession(t, w, "sess-grpc")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.logs != n || !rcv.names["agentbox session"] || !rcv.names["exec bash"] || !rcv.names["exec mount"] {
		t.Fatalf("%d logs (want %d), spans %v", rcv.logs, n, rcv.names)
	}
}
