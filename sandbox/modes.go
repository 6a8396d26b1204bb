package sandbox

import "fmt"

// WorkspaceDir is where the workspace is mounted inside every sandbox, and
// the working directory of every command.
const WorkspaceDir = "/workspace"

// NetworkMode is a sandbox's network access.
type NetworkMode string

// Network modes.
const (
	NetworkNone NetworkMode = "none" // no network interface but loopback
	// NetworkProxy: only loopback; egress through the host-side proxy
	// (package netproxy), allowed by the policy's network rules.
	NetworkProxy NetworkMode = "proxy"
	NetworkOpen  NetworkMode = "open" // the engine's default network
)

// NetworkModes lists the valid network modes, in documentation order.
var NetworkModes = []NetworkMode{NetworkNone, NetworkProxy, NetworkOpen}

// Valid reports whether m is a known network mode.
func (m NetworkMode) Valid() bool {
	return m == NetworkNone || m == NetworkProxy || m == NetworkOpen
}

// ParseNetworkMode parses a network mode; "" is an error.
func ParseNetworkMode(s string) (NetworkMode, error) {
	if m := NetworkMode(s); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("%w: network %q: want none, proxy or open", ErrConfig, s)
}

// WorkspaceMode is how the workspace is given to a sandbox.
type WorkspaceMode string

// Workspace modes.
const (
	WorkspaceRW   WorkspaceMode = "rw"   // mounted read-write
	WorkspaceRO   WorkspaceMode = "ro"   // mounted read-only
	WorkspaceCopy WorkspaceMode = "copy" // the sandbox works on a copy (mounted rw)
)

// WorkspaceModes lists the valid workspace modes, in documentation order.
var WorkspaceModes = []WorkspaceMode{WorkspaceRW, WorkspaceRO, WorkspaceCopy}

// Valid reports whether m is a known workspace mode.
func (m WorkspaceMode) Valid() bool {
	return m == WorkspaceRW || m == WorkspaceRO || m == WorkspaceCopy
}

// ParseWorkspaceMode parses a workspace mode; "" is an error.
func ParseWorkspaceMode(s string) (WorkspaceMode, error) {
	if m := WorkspaceMode(s); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("%w: workspace mode %q: want rw, ro or copy", ErrConfig, s)
}
