package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/agentbox/agentbox/sandbox"
)

// EgressDialer adapts the host-side proxy of a session (sandbox.Egress) to
// Transport.DialProxy for a backend that has no socket of its own to
// offer: each Dial returns one end of a connected unix socket pair whose
// other end Egress serves, in this process, for Session (half-closes and
// deadlines work as on any socket). Call Wait after Client.Close, whose
// end ends every connection served.
type EgressDialer struct {
	Egress  sandbox.Egress
	Session string
	wg      sync.WaitGroup
}

// Dial is the Transport.DialProxy: ctx bounds the connection served.
func (d *EgressDialer) Dial(ctx context.Context) (net.Conn, error) {
	if d.Egress == nil {
		return nil, errors.New("no host-side proxy (sandbox.Config.Egress is nil)")
	}
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("connecting the host-side proxy: %w", err)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		// The executor's forwarder names the connection's processes first
		// (sandbox.OriginPrefix); a stream without that line is not served.
		br := bufio.NewReader(theirs)
		o, err := sandbox.ReadOrigin(br)
		if err != nil {
			theirs.Close()
			return
		}
		d.Egress.ServeEgress(ctx, d.Session, &sandbox.OriginConn{Conn: theirs, R: br, Origin: o})
	}()
	return ours, nil
}

// Wait waits until every connection Dial handed out has been served.
func (d *EgressDialer) Wait() { d.wg.Wait() }
