package sandbox

import "context"

// Usage is what a sandbox consumed, read from its cgroup (the engine's
// host) before it is removed. Known is false when the backend cannot see
// its cgroup (a remote engine, a cluster): the figures are then zero.
type Usage struct {
	Known           bool    `json:"known"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes"`
	OOMKills        int     `json:"oom_kills"`
	BytesWritten    int64   `json:"bytes_written"` // block I/O written by the sandbox's processes
}

// UsageReporter is a Session that can say what its sandbox consumed so
// far; call it before Close.
type UsageReporter interface {
	Usage(ctx context.Context) (Usage, error)
}
