package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"time"
)

// serveMetrics serves Prometheus text metrics of the batch on addr at
// /metrics until the returned stop is called.
func (b *batcher) serveMetrics(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w; choose a free host:port", addr, err)
	}
	b.prog.notice(fmt.Sprintf("metrics at http://%s/metrics", ln.Addr()))
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		b.writeMetrics(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.prog.notice("metrics: " + err.Error())
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// writeMetrics writes the batch's metrics in the Prometheus text format.
func (b *batcher) writeMetrics(w io.Writer) {
	p := b.prog
	p.mu.Lock()
	running := len(p.running)
	queued := p.pending - p.ran - running
	byStat := make(map[string]int, len(p.byStat))
	for k, v := range p.byStat {
		byStat[k] = v
	}
	review, held, alarms := p.review, p.held, p.alarms
	perMin := 0.0
	if el := time.Since(p.start); el > 0 {
		perMin = float64(p.ran) / el.Minutes()
	}
	p.mu.Unlock()
	lb := fmt.Sprintf(`batch=%q`, b.id)
	metric := func(name, typ, help string, v any, extra string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		if extra == "" {
			fmt.Fprintf(w, "%s{%s} %v\n", name, lb, v)
		}
	}
	metric("agentbox_batch_tasks_queued", "gauge", "Tasks of this run not picked up yet.", max(queued, 0), "")
	metric("agentbox_batch_tasks_running", "gauge", "Tasks picked up and not finished.", running, "")
	metric("agentbox_batch_tasks_done_total", "counter", "Tasks finished in this run, by status.", 0, "status")
	stats := make([]string, 0, len(byStat))
	for s := range byStat {
		stats = append(stats, s)
	}
	sort.Strings(stats)
	for _, s := range stats {
		fmt.Fprintf(w, "agentbox_batch_tasks_done_total{%s,status=%q} %d\n", lb, s, byStat[s])
	}
	metric("agentbox_batch_tasks_to_review_total", "counter", "Finished tasks with held changes or alarms, a resumed batch's earlier runs included (shown marked: ok!).", review, "")
	metric("agentbox_batch_held_changes_total", "counter", "Changes held back from the tasks' copies in this run (agentbox changes SESSION --held).", held, "")
	metric("agentbox_batch_alarms_total", "counter", "Alarms of the tasks finished in this run (forbidden effects undone, unexpected programs, refused egress).", alarms, "")
	metric("agentbox_batch_tasks_per_minute", "gauge", "Tasks finished per minute in this run.", fmt.Sprintf("%.3f", perMin), "")
	metric("agentbox_batch_slot_waits_total", "counter", "Times a sandbox waited for a slot of the host-wide cap.", b.slots.waits.Load(), "")
	metric("agentbox_batch_slot_waiting", "gauge", "Sandboxes waiting for a slot now.", b.slots.waiting.Load(), "")
}
