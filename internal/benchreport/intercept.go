package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// interceptSummary states the credentials broker's cost against its
// targets from the netproxy benchmark lines in gobench: a 100 MB HTTPS
// download through interception at ≥ 50% of direct (MB/s, and CPU time of
// server, proxy and client together), and a request after the first
// within 2 ms of a plain tunnel. "" when the lines are missing.
func interceptSummary(gobench string) string {
	metric := func(name, unit string) (float64, bool) {
		for _, l := range strings.Split(gobench, "\n") {
			f := strings.Fields(l)
			if len(f) == 0 || f[0] != name && !strings.HasPrefix(f[0], name+"-") {
				continue
			}
			for i := 1; i+1 < len(f); i++ {
				if f[i+1] == unit {
					v, err := strconv.ParseFloat(f[i], 64)
					return v, err == nil
				}
			}
		}
		return 0, false
	}
	direct, ok1 := metric("BenchmarkHTTPSDownload100MB/direct", "MB/s")
	icpt, ok2 := metric("BenchmarkHTTPSDownload100MB/intercepted", "MB/s")
	tunnelReq, ok3 := metric("BenchmarkHTTPSRequestAfterFirst/tunnel", "ns/op")
	icptReq, ok4 := metric("BenchmarkHTTPSRequestAfterFirst/intercepted", "ns/op")
	if !ok1 || !ok2 || !ok3 || !ok4 || direct == 0 {
		return ""
	}
	s := fmt.Sprintf("Interception (netproxy): a 100 MB HTTPS download through the intercepting proxy, scrubbed of a secret, runs at **%.0f%%** of direct (target ≥ 50%%)", 100*icpt/direct)
	if dc, ok := metric("BenchmarkHTTPSDownload100MB/direct", "cpu-ms/op"); ok {
		if ic, ok := metric("BenchmarkHTTPSDownload100MB/intercepted", "cpu-ms/op"); ok && ic > 0 {
			s += fmt.Sprintf(", %.0f%% by the CPU time server, proxy and client take together (what other load on the machine does not blur)", 100*dc/ic)
		}
	}
	return s + fmt.Sprintf("; an intercepted request after the first takes %s more than through a plain tunnel (target ≤ 2 ms).\n", ms(time.Duration(icptReq-tunnelReq)))
}
