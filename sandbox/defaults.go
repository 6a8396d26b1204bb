package sandbox

import (
	"fmt"
	"slices"
	"time"
)

// Defaults of a session, in one place: the policy's sandbox defaults are
// built from them, and a backend fills a zero Config field with them.
const (
	DefaultImage       = "agentbox/base:latest"
	DefaultCPUs        = 1.0
	DefaultMemoryBytes = int64(1 << 30)
	DefaultPids        = int64(256)
	// DefaultCallTimeout bounds one command that does not set a timeout:
	// real test suites and builds fit in it.
	DefaultCallTimeout = 120 * time.Second
	// DefaultCallTimeoutMax bounds the timeout a model may ask for in one
	// execute_bash call (sandbox.timeouts.call_max).
	DefaultCallTimeoutMax = 10 * time.Minute
	// DefaultOutputCap is the output kept per call (head + tail), in bytes.
	DefaultOutputCap = 16 << 10
)

// DefaultLimits fills the CPU, memory and process limits left unset with
// the defaults, and refuses a memory limit below 8 MiB (the executor and a
// shell need about that much).
func (c *Config) DefaultLimits() error {
	if c.CPUs <= 0 {
		c.CPUs = DefaultCPUs
	}
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.MemoryBytes < 8<<20 {
		return fmt.Errorf("%w: memory limit %d bytes is below the 8 MiB minimum", ErrConfig, c.MemoryBytes)
	}
	if c.Pids <= 0 {
		c.Pids = DefaultPids
	}
	return nil
}

// ImageNames are the images `agentbox image build NAME` builds; `--image
// NAME` (or sandbox.image: NAME) is short for agentbox/NAME:latest.
var ImageNames = []string{"base", "full", "go", "node", "python"}

// ImageRef expands the shorthand of one of ImageNames to
// agentbox/NAME:latest; anything else is taken as written.
func ImageRef(image string) string {
	if slices.Contains(ImageNames, image) {
		return "agentbox/" + image + ":latest"
	}
	return image
}

// ImageBuildHint says how to build a missing image: `agentbox image build
// NAME` for agentbox's own images.
func ImageBuildHint(image string) string {
	for _, n := range ImageNames {
		if image == "agentbox/"+n+":latest" {
			return "agentbox image build " + n
		}
	}
	return "agentbox image build"
}
