package agent

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// LogProbes reads an audit log and returns what its sessions did as policy
// probes, each with its source "name:line": every tool call's action (its
// decision record; the tool's policy action, as audit replay decides it),
// every file a session changed (session_end: a write), and every egress
// attempt (net: host:port and the address it resolved to). Policy
// authoring (suggest, diff, check --within) reads logs through it.
func LogProbes(r io.Reader, name string) ([]policy.Probe, error) {
	var out []policy.Probe
	err := audit.Scan(r, func(line int, rec audit.Record) error {
		src := fmt.Sprintf("%s:%d", name, line)
		switch rec.Event {
		case audit.EventToolCall:
			if rec.Phase == audit.PhaseResult || rec.Decision == "" {
				return nil
			}
			if a, ok := ActionFor(rec.Tool, rec.Args); ok {
				out = append(out, policy.Probe{Action: a, Source: src})
			}
		case audit.EventNet:
			if rec.NetHost == "" || rec.NetPort == 0 {
				return nil
			}
			out = append(out, policy.Probe{Connect: net.JoinHostPort(rec.NetHost, strconv.Itoa(rec.NetPort)), Addr: rec.NetAddr, Source: src})
		case audit.EventSessionEnd:
			for _, f := range rec.Files {
				if f.Path != "" {
					out = append(out, policy.Probe{Action: policy.Action{Kind: policy.Write, Path: f.Path}, Source: src})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}
