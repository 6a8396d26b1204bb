package audit

import (
	"net"
	"strconv"
	"strings"
)

// NetDecider decides a recorded egress attempt (a net event): host, port
// and the address the proxy resolved ("" when it resolved none). A Decider
// that is not a NetDecider denies every net event.
type NetDecider interface {
	DecideNet(host string, port int, addr string) (decision, rule string)
}

// NetRequestDecider decides a recorded HTTP request inside an
// intercepted connection (network.rules on method and path).
type NetRequestDecider interface {
	DecideNetRequest(host string, port int, method, path string) (decision, rule string)
}

// netTool is Change.Tool for a net event.
const netTool = "net"

// replayNet re-decides one net event with d and reports whether the
// decision changes.
func replayNet(line int, rec *Record, d Decider) (Change, bool) {
	if rec.NetPath != "" && rec.Decision == "deny" && !strings.HasPrefix(rec.Rule, "network.rules") {
		// Refused for what the request carried (a misplaced secret's
		// placeholder, an ambiguous path), not by a rule: a policy alone
		// cannot re-decide it.
		return Change{}, false
	}
	nd, nr := "deny", "no network rules"
	if n, ok := d.(NetDecider); ok {
		nd, nr = n.DecideNet(rec.NetHost, rec.NetPort, rec.NetAddr)
	}
	if n, ok := d.(NetRequestDecider); ok && rec.NetPath != "" && nd == "allow" {
		nd, nr = n.DecideNetRequest(rec.NetHost, rec.NetPort, rec.NetMethod, rec.NetPath)
	}
	if nd == rec.Decision {
		return Change{}, false
	}
	return Change{
		Line: line, Session: rec.Session, Tool: netTool, Summary: netSummary(rec),
		Old: rec.Decision, OldRule: rec.Rule, New: nd, NewRule: nr,
	}, true
}

// netSummary is host:port and the address dialed, for one line.
func netSummary(rec *Record) string {
	s := net.JoinHostPort(rec.NetHost, strconv.Itoa(rec.NetPort))
	if rec.NetAddr != "" {
		s += " (" + rec.NetAddr + ")"
	}
	return clean(s, 100)
}

// netText is the detail of a net event in audit show.
func netText(rec *Record, paint func(string, string) string) string {
	bytes := func(k string, n *int64) string {
		if n == nil {
			return ""
		}
		return k + " " + strconv.FormatInt(*n, 10)
	}
	req := ""
	if rec.NetMethod != "" {
		req = clean(rec.NetMethod, 10) + " " + clean(rec.NetPath, 80)
		if rec.NetStatus != 0 {
			req += " " + strconv.Itoa(rec.NetStatus)
		}
	}
	if rec.Secret != "" {
		req = joinNonEmpty(req, "secret "+clean(rec.Secret, 60))
	}
	return joinNonEmpty(netSummary(rec), req, "→ "+decisionText(rec, paint),
		bytes("up", rec.BytesUp), bytes("down", rec.BytesDown), durationText(rec.DurationMS))
}
