package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
)

// OriginPrefix starts the line the executor's forwarder sends first on
// each proxied stream of the channel (never on the mounted socket, which
// a program in the sandbox could reach itself): which processes opened
// the connection. The host reads it before the client's bytes.
const OriginPrefix = "AGENTBOX-ORIGIN "

// Origin is who opened a proxied connection, as the executor's tracer
// saw it: every process holding the client's socket, each with its
// program chain; or why they could not be found.
type Origin struct {
	Holders []OriginProcess `json:"holders,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// OriginProcess is one process and its program chain: its argv, then
// each traced ancestor's, nearest first (argv[0] is the executed file
// when the program named another).
type OriginProcess struct {
	PID   int        `json:"pid"`
	Chain [][]string `json:"chain"`
}

// maxOriginLine bounds the origin line.
const maxOriginLine = 1 << 20

// ReadOrigin reads the origin line from the start of a stream.
func ReadOrigin(br *bufio.Reader) (*Origin, error) {
	var line []byte
	for {
		part, more, err := br.ReadLine()
		if err != nil {
			return nil, fmt.Errorf("reading the connection's origin: %w", err)
		}
		line = append(line, part...)
		if len(line) > maxOriginLine {
			return nil, errors.New("the connection's origin line is too long")
		}
		if !more {
			break
		}
	}
	rest, ok := strings.CutPrefix(string(line), OriginPrefix)
	if !ok {
		return nil, errors.New("the stream does not start with the connection's origin")
	}
	var o Origin
	if err := json.Unmarshal([]byte(rest), &o); err != nil {
		return nil, fmt.Errorf("the connection's origin: %w", err)
	}
	return &o, nil
}

// OriginConn is a proxied connection whose origin the executor reported;
// reads continue after the origin line.
type OriginConn struct {
	net.Conn
	R      *bufio.Reader
	Origin *Origin
}

func (c *OriginConn) Read(b []byte) (int, error) { return c.R.Read(b) }
