package otlp

import (
	"cmp"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The audit writer hands records to a Sink and asks it for its drops.
var (
	_ audit.Sink        = (*Sink)(nil)
	_ audit.DropCounter = (*Sink)(nil)
)

// item is one record waiting to be sent.
type item struct {
	rec  audit.Record
	line []byte
}

// Sink turns audit records into spans and log records.
type Sink struct {
	cfg    Config
	tp     *sdktrace.TracerProvider
	lp     *sdklog.LoggerProvider
	q      chan item
	done   chan struct{}
	mu     sync.Mutex
	drops  map[string]int
	closed bool
	st     *state
}

// New starts a Sink sending to the collector cfg names. Nothing is sent
// until records arrive; a collector that is down is not an error here.
func New(ctx context.Context, cfg Config) (*Sink, error) {
	te, le, err := cfg.exporters(ctx)
	if err != nil {
		return nil, err
	}
	// Export failures (a collector that is down) are not the session's
	// business: they would print on its terminal.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	res := resource.NewSchemaless(attribute.String("service.name", "agentbox"))
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	s := &Sink{
		cfg: cfg,
		tp: sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			// Blocking: a full span queue holds the sink's goroutine, so
			// what is lost is lost at the sink's queue, and counted.
			sdktrace.WithBatcher(te, sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(512), sdktrace.WithBatchTimeout(time.Second),
				sdktrace.WithExportTimeout(cfg.timeout()))),
		lp: sdklog.NewLoggerProvider(sdklog.WithResource(res),
			sdklog.WithProcessor(&logBatcher{exp: le, timeout: cfg.timeout(), max: cmp.Or(cfg.Batch, 512)})),
		q:     make(chan item, cfg.Queue),
		done:  make(chan struct{}),
		drops: map[string]int{},
	}
	s.st = newState(s.tp.Tracer("github.com/agentbox/agentbox/audit"), s.lp.Logger("github.com/agentbox/agentbox/audit"))
	go s.run()
	return s, nil
}

// run turns queued records into spans and logs; log records are flushed
// every second (spans by the SDK's batcher).
func (s *Sink) run() {
	defer close(s.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-s.q:
			if !ok {
				s.st.endAll()
				return
			}
			s.st.record(&it.rec, it.line)
		case <-tick.C:
			_ = s.lp.ForceFlush(context.Background())
		}
	}
}

// Record queues one written record (the copy as on disk and its line).
// It never blocks a live session: a full queue drops the record and
// counts it against its session.
func (s *Sink) Record(rec *audit.Record, line []byte) {
	it := item{rec: *rec, line: append([]byte(nil), line...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.cfg.Block {
		s.q <- it
		return
	}
	select {
	case s.q <- it:
	default:
		s.drops[rec.Session]++
	}
}

// Dropped is how many records of session did not fit the queue.
func (s *Sink) Dropped(session string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drops[session]
}

// Close ends the open spans and flushes, each bounded by the timeout.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.q)
	s.mu.Unlock()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.timeout())
	defer cancel()
	return errors.Join(s.tp.Shutdown(ctx), s.lp.Shutdown(ctx))
}

// Export sends an existing log: every record, waiting for room in the
// queue instead of dropping.
func Export(ctx context.Context, cfg Config, r io.Reader) (int, error) {
	cfg.Block = true
	s, err := New(ctx, cfg)
	if err != nil {
		return 0, err
	}
	n := 0
	err = audit.ScanLines(r, func(_ int, line []byte, rec *audit.Record) error {
		if line == nil {
			return nil // longer than a reader keeps: left out
		}
		s.Record(rec, line)
		n++
		return ctx.Err()
	}, nil)
	return n, errors.Join(err, s.Close())
}
