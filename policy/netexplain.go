package policy

import (
	"encoding/json"
	"fmt"
	"io"
)

// ExplainConnect decides a connection to host:port as the proxy would
// before resolving the name (an IP literal is decided completely). A
// target the proxy would refuse as malformed or ambiguous is a Deny by
// rule "request", as in the proxy.
func (p *Policy) ExplainConnect(hostport string) NetDecision {
	t, err := ParseNetTarget(hostport, 0)
	if err != nil {
		return NetDecision{Verdict: Deny, Rule: "request", Target: hostport,
			Reason: fmt.Sprintf("%q refused: bad or ambiguous target: %v", hostport, err)}
	}
	return p.NetworkDecision(t, nil)
}

// WriteNetExplanation prints a network decision for humans, with what the
// decision does not cover: the sandbox's network mode and, for a name, the
// check of the addresses it resolves to.
func (p *Policy) WriteNetExplanation(w io.Writer, d NetDecision) error {
	if _, err := fmt.Fprintf(w, "%s: %s\n", d.Verdict, Visible(d.Reason)); err != nil {
		return err
	}
	if d.Verdict == Allow && d.Address == "" {
		if _, err := fmt.Fprintln(w, "  the proxy then resolves the name and refuses it if any address is loopback, private, link-local, CGNAT, unique-local, multicast or cloud metadata and no IP or CIDR rule names it"); err != nil {
			return err
		}
	}
	if p.Sandbox.Network != "proxy" {
		_, err := fmt.Fprintf(w, "  note: sandbox.network is %s, so the proxy is not used (none: no network at all; open: the engine's network, unfiltered)\n", p.Sandbox.Network)
		return err
	}
	return nil
}

// WriteNetExplanationJSON prints the decision as JSON.
func WriteNetExplanationJSON(w io.Writer, d NetDecision) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}
