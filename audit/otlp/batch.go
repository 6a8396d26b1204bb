package otlp

import (
	"context"
	"sync"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// logBatcher exports log records in batches, synchronously in the sink's
// goroutine: when the collector is slow it holds that goroutine (and the
// sink's bounded queue fills and counts its drops) instead of dropping
// uncounted as the SDK's batch processor does.
type logBatcher struct {
	mu      sync.Mutex
	exp     sdklog.Exporter
	timeout time.Duration
	max     int
	buf     []sdklog.Record
}

var _ sdklog.Processor = (*logBatcher)(nil)

func (b *logBatcher) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (b *logBatcher) OnEmit(ctx context.Context, r *sdklog.Record) error {
	b.mu.Lock()
	b.buf = append(b.buf, r.Clone())
	full := len(b.buf) >= b.max
	b.mu.Unlock()
	if full {
		return b.ForceFlush(ctx)
	}
	return nil
}

func (b *logBatcher) ForceFlush(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	err := b.exp.Export(ctx, b.buf)
	b.buf = b.buf[:0] // sent or lost: a batch is never retried
	return err
}

func (b *logBatcher) Shutdown(ctx context.Context) error {
	err := b.ForceFlush(ctx)
	if serr := b.exp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}
