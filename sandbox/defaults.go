package sandbox

import "time"

// Defaults of a session, in one place: the policy's sandbox defaults are
// built from them, and a backend fills a zero Config field with them.
const (
	DefaultImage       = "agentbox/base:latest"
	DefaultCPUs        = 1.0
	DefaultMemoryBytes = int64(1 << 30)
	DefaultPids        = int64(256)
	// DefaultCallTimeout bounds one command that does not set a timeout.
	DefaultCallTimeout = 60 * time.Second
	// DefaultOutputCap is the output kept per call (head + tail), in bytes.
	DefaultOutputCap = 16 << 10
)
