package executor

import (
	"context"
	"fmt"
	"net"
	"time"
)

// startForward runs the forwarder of `network: proxy` for the session:
// ProxyListenAddr carried to the host-side proxy's unix socket. It first
// connects to the socket once and closes the probe without sending a byte
// (the host does not count it as an attempt), so a runtime that cannot
// connect a mounted host socket fails the session start with a clear
// error instead of a sandbox whose proxy answers 502. stop ends the
// forwarder and waits for it.
func startForwarder(socket string) (stop func(), err error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	probe, err := d.Dial("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("network proxy: cannot connect the host's proxy socket %s: %w (under gVisor the runsc runtime needs --host-uds=open in its runtimeArgs; see agentbox doctor)", socket, err)
	}
	probe.Close()
	ln, err := ListenForward()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ServeForward(ctx, ln, CarryTo(func(ctx context.Context) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		}))
	}()
	return func() { cancel(); <-done }, nil
}
