// Package agentbox holds the files that the whole program embeds: the
// documented example policy, which is also the built-in default policy.
//
// The program itself lives in cmd/agentbox; the packages agent, sandbox,
// policy, audit and images do the work.
package agentbox

import _ "embed"

// DefaultPolicy is policy.example.yaml, the built-in default policy used when
// no --policy flag is given and ./agentbox.yaml does not exist.
//
//go:embed policy.example.yaml
var DefaultPolicy []byte

// Version is the agentbox version, overridden at build time with
// -ldflags "-X github.com/agentbox/agentbox.Version=...".
var Version = "0.1.0-dev"
