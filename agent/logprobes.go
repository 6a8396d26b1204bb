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
//
// A probe Ran when its call ran: a decision that let it run (allow, or a
// learning run's would_ask/would_deny) followed by its result; an egress
// attempt the proxy let through; a file the session changed.
func LogProbes(r io.Reader, name string) ([]policy.Probe, error) {
	var out []policy.Probe
	pending := map[string]int{} // session and call id -> index of its decision probe
	err := audit.Scan(r, func(line int, rec audit.Record) error {
		src := fmt.Sprintf("%s:%d", name, line)
		switch rec.Event {
		case audit.EventToolCall:
			key := rec.Session + "\x00" + rec.CallID
			if rec.Phase == audit.PhaseResult {
				// It ran when a result follows a decision that let it run
				// (a result denied by the executor did not run).
				if i, ok := pending[key]; ok && rec.Decision == "allow" {
					out[i].Ran = true
				}
				delete(pending, key)
				return nil
			}
			if rec.Decision == "" {
				return nil
			}
			if a, ok := ActionFor(rec.Tool, rec.Args); ok {
				if audit.Ran(rec.Decision) && rec.CallID != "" {
					pending[key] = len(out)
				}
				out = append(out, policy.Probe{Action: a, Source: src, Session: rec.Session, Time: rec.Time})
			}
		case audit.EventNet:
			if rec.NetHost == "" || rec.NetPort == 0 {
				return nil
			}
			out = append(out, policy.Probe{Connect: net.JoinHostPort(rec.NetHost, strconv.Itoa(rec.NetPort)), Addr: rec.NetAddr, Source: src,
				Ran: audit.Ran(rec.Decision), Session: rec.Session, Time: rec.Time})
		case audit.EventSessionEnd:
			for _, f := range rec.Files {
				if f.Path != "" {
					out = append(out, policy.Probe{Action: policy.Action{Kind: policy.Write, Path: f.Path}, Source: src,
						Ran: true, Session: rec.Session, Time: rec.Time})
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
