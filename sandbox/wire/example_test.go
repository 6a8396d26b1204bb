package wire

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// A Client speaks the framed, authenticated protocol over any byte stream
// to the executor. Here the executor's side is a few lines over a net.Pipe
// that answer the hello and run "echo" by upper-casing its argument; a
// backend supplies the container's attached stdio instead.
func ExampleClient() {
	hostEnd, execEnd := net.Pipe()
	go func() { // the executor's side
		defer execEnd.Close()
		r := bufio.NewReader(execEnd)
		hello, err := ReadRequest(r, nil)
		if err != nil {
			return
		}
		key := hello.Key // every later frame is authenticated with it
		_ = WriteResponse(execEnd, key, &Response{ID: hello.ID, Protocol: Protocol})
		for {
			req, err := ReadRequest(r, key)
			if err != nil {
				return
			}
			out := strings.ToUpper(strings.TrimPrefix(req.Command, "echo ")) + "\n"
			_ = WriteResponse(execEnd, key, &Response{ID: req.ID, Output: []byte(out)})
		}
	}()
	c := NewClient(Transport{Stream: hostEnd, Kill: func(context.Context) error { return hostEnd.Close() }})
	defer c.Close()
	ctx := context.Background()
	if err := c.HelloConfig(ctx, sandbox.Config{}, ""); err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Exec(ctx, sandbox.ExecRequest{Command: "echo hello", Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Output)
	// Output:
	// exit 0: HELLO
}
