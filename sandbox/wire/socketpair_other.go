//go:build !unix

package wire

import (
	"errors"
	"net"
)

// socketPair is unix-only: without it the proxy channel refuses every
// connection (fail closed).
func socketPair() (net.Conn, net.Conn, error) {
	return nil, nil, errors.New("the in-process proxy connection needs unix sockets")
}
