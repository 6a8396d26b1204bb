package policy

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// HostHazard tells whether a change at a workspace-relative path is a host
// hazard (a file host tools run or load by themselves): what it is, or ""
// when it is none. Staging holds a hazard whatever files.write allows,
// unless the first files.write.allow glob that matches the path names it
// literally (no wildcard); the policy tools count such a lifting as looser.
type HostHazard func(rel string) string

var hostHazard atomic.Pointer[HostHazard]

// hazardSource marks the example of a lifted hazard.
const hazardSource = "host hazard"

// SetHostHazard installs the program's hazard check (the workspace
// package's, passed in by cmd/agentbox: policy sits below workspace). With
// none installed, no path counts as a hazard.
func SetHostHazard(h HostHazard) {
	if h == nil {
		hostHazard.Store(nil)
		return
	}
	hostHazard.Store(&h)
}

func hazardOf(rel string) string {
	if h := hostHazard.Load(); h != nil {
		return (*h)(rel)
	}
	return ""
}

// isLiteralGlob reports whether a glob names one path (no wildcard).
func isLiteralGlob(g string) bool { return g != "" && !strings.ContainsAny(g, "*?[{\\") }

// LiftsHazard reports whether p promotes a host hazard at rel: the first
// files.write.allow glob that matches it (none denies it) is literal.
func (p *Policy) LiftsHazard(rel string) bool {
	v, _, g := MatchFile(p.write.allow, p.write.deny, rel, true)
	return v == Allow && isLiteralGlob(g)
}

// liftedHazards are the findings of n's literal files.write.allow entries
// that lift a host hazard the boundary b holds.
func liftedHazards(n, b *Policy) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i, g := range n.write.allow {
		if !isLiteralGlob(g) || strings.HasPrefix(g, "/") || seen[g] {
			continue
		}
		seen[g] = true
		why := hazardOf(g)
		if why == "" || !n.LiftsHazard(g) || b.LiftsHazard(g) {
			continue
		}
		nv, nr, _ := MatchFile(n.write.allow, n.write.deny, g, true)
		bv, br, _ := MatchFile(b.write.allow, b.write.deny, g, true)
		out = append(out, Finding{
			Field: fmt.Sprintf("files.write.allow[%d]", i),
			What: fmt.Sprintf("%s names %s literally: it lifts the host hazard (%s), which the boundary holds; a change to it reaches the host",
				quoteGlob(g), g, why),
			Example: &Example{Kind: "write", Subject: g, New: nv, NewRule: nr, Boundary: bv, BoundaryRule: br, Source: hazardSource},
		})
	}
	return out
}

func quoteGlob(g string) string { return fmt.Sprintf("%q", g) }
