package netproxy

import (
	"errors"
	"io"
	"net"
)

// closeWriter is a connection that can half-close (TCP, unix sockets).
type closeWriter interface {
	CloseWrite() error
}

// tunnel copies bytes both ways between the client c (read through cr,
// which may hold bytes the client sent after its request head) and the
// upstream up until both directions have ended. An end of stream in one
// direction is passed on as a half-close; an error in either direction
// closes both connections. It returns the bytes sent up and down.
func tunnel(c net.Conn, cr io.Reader, up net.Conn) (upBytes, downBytes int64, err error) {
	type result struct {
		n   int64
		err error
	}
	upDone := make(chan result, 1)
	go func() {
		n, err := io.Copy(up, cr)
		if err == nil {
			err = halfClose(up)
		} else {
			abort(c, up)
		}
		upDone <- result{n, err}
	}()
	downBytes, derr := io.Copy(c, up)
	if derr == nil {
		derr = halfClose(c)
	} else {
		abort(c, up)
	}
	r := <-upDone
	return r.n, downBytes, errors.Join(quiet(r.err), quiet(derr))
}

// halfClose passes an end of stream on; a connection that cannot
// half-close is closed.
func halfClose(c net.Conn) error {
	if cw, ok := c.(closeWriter); ok {
		if err := cw.CloseWrite(); err != nil {
			c.Close()
		}
		return nil
	}
	c.Close()
	return nil
}

// quiet drops the error of a connection this package closed on purpose.
func quiet(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func abort(c, up net.Conn) {
	c.Close()
	up.Close()
}
