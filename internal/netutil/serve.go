// Package netutil holds the one accept loop the host-side proxy and the
// in-container forwarder share.
package netutil

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// ServeEach accepts connections from ln and hands each to handle in its
// own goroutine until ctx ends or ln fails. A connection still open when
// ctx ends is closed. ServeEach closes ln and returns after every handle
// call has returned; the error (prefixed with what) is nil when ctx ended
// it.
func ServeEach(ctx context.Context, ln net.Listener, what string, handle func(context.Context, net.Conn)) error {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	var wg sync.WaitGroup
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("%s: %w", what, aerr)
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopC := context.AfterFunc(ctx, func() { c.Close() })
			defer stopC()
			handle(ctx, c)
		}()
	}
	cancel()
	stop()
	ln.Close()
	wg.Wait()
	return err
}
