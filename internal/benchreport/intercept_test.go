package main

import (
	"strings"
	"testing"
)

func TestInterceptSummary(t *testing.T) {
	lines := `pkg: github.com/agentbox/agentbox/netproxy
BenchmarkHTTPSDownload100MB/direct-2         	      31	  75938144 ns/op	1380.83 MB/s	       200.0 cpu-ms/op	  122402 B/op	    4205 allocs/op
BenchmarkHTTPSDownload100MB/tunnel-2         	      25	  80187649 ns/op	1307.65 MB/s	  102647 B/op	    3364 allocs/op
BenchmarkHTTPSDownload100MB/intercepted-2    	      15	 147737509 ns/op	 690.41 MB/s	       400.0 cpu-ms/op	  328794 B/op	    7660 allocs/op
BenchmarkHTTPSRequestAfterFirst/tunnel-2         	   45092	     52629 ns/op	    5622 B/op	      69 allocs/op
BenchmarkHTTPSRequestAfterFirst/intercepted-2         	   12382	    196786 ns/op	   81869 B/op	     183 allocs/op`
	got := interceptSummary(lines)
	for _, want := range []string{"**50%** of direct", "50% by the CPU time", "0.14 ms more"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	if interceptSummary(strings.Split(lines, "\n")[0]) != "" {
		t.Error("a summary without the benchmark lines")
	}
}
