package wire

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

type pipeStream struct {
	io.Reader
	io.Writer
}

// An executor built from other code (another protocol, or one too old to
// say) fails the hello with a ProtocolError, and the sandbox is killed.
func TestHelloProtocolMismatch(t *testing.T) {
	for _, theirs := range []string{"", "0123456789ab"} {
		hostR, exeW := io.Pipe()
		exeR, hostW := io.Pipe()
		go func() {
			req, err := ReadRequest(exeR, nil)
			if err != nil {
				return
			}
			_ = WriteResponse(exeW, req.Key, &Response{ID: req.ID, Version: "old", Protocol: theirs})
		}()
		killed := false
		c := NewClient(Transport{Stream: pipeStream{hostR, hostW}, Kill: func(context.Context) error { killed = true; return nil }})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Hello(ctx, 0, false)
		cancel()
		if !IsProtocolError(err) || !errors.Is(err, sandbox.ErrExecutor) || !killed {
			t.Fatalf("protocol %q: %v (killed %v)", theirs, err, killed)
		}
		hostR.Close()
		exeR.Close()
		c.Close()
	}
	if len(Protocol) != 12 {
		t.Fatalf("Protocol %q", Protocol)
	}
}
