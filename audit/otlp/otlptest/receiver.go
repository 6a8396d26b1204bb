// Package otlptest is a minimal OTLP/HTTP receiver for tests, built on
// the official protobuf types (go.opentelemetry.io/proto/otlp): it decodes
// what OpenTelemetry exporters send to /v1/traces and /v1/logs.
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver collects the spans and log records sent to it.
type Receiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	logs  []*logspb.LogRecord
	hang  chan struct{} // when set, requests wait on it (a stuck collector)
}

// New starts a receiver for the test; with hang, every request waits
// until the test ends (a stuck collector).
func New(t testing.TB, hang bool) *Receiver {
	r := &Receiver{}
	if hang {
		r.hang = make(chan struct{})
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		if r.hang != nil {
			close(r.hang)
		}
		r.Close()
	})
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if r.hang != nil {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.URL.Path {
	case "/v1/traces":
		var m coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/v1/logs":
		var m collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rl := range m.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				r.logs = append(r.logs, sl.LogRecords...)
			}
		}
		out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, req)
	}
}

// Got returns what was received so far.
func (r *Receiver) Got() ([]*tracepb.Span, []*logspb.LogRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]*logspb.LogRecord(nil), r.logs...)
}

// Attrs flattens OTLP attributes to strings (arrays joined by spaces).
func Attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = value(kv.Value)
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_ArrayValue:
		s := ""
		for i, e := range x.ArrayValue.Values {
			if i > 0 {
				s += " "
			}
			s += value(e)
		}
		return s
	}
	return v.String()
}
