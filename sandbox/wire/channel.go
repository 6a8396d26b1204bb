package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
)

// errStreamProtocol marks an authenticated stream frame no honest peer
// sends.
var errStreamProtocol = errors.New("the proxy stream protocol was broken")

// relayFrame checks one executor-originated frame (sequence, shape) and
// hands it to the relay. The reader calls it; it never blocks.
func (c *Client) relayFrame(resp *Response) error {
	switch {
	case c.relay == nil:
		return fmt.Errorf("%w: a stream frame, but the hello asked for no proxy channel", errStreamProtocol)
	case resp.Stream == nil || resp.ID != 0:
		return fmt.Errorf("%w: a sequenced frame that is not a stream frame (id %d)", errStreamProtocol, resp.ID)
	case resp.Seq != c.streamSeq+1:
		return fmt.Errorf("%w: stream frame %d out of sequence (want %d): replayed, dropped or forged", errStreamProtocol, resp.Seq, c.streamSeq+1)
	}
	c.streamSeq = resp.Seq
	if err := c.relay.mux.Deliver(resp.Stream); err != nil {
		return fmt.Errorf("%w: %w", errStreamProtocol, err)
	}
	return nil
}

// channelEnded runs when the reader stops at err: every proxied
// connection ends, and a frame that failed authentication or broke the
// stream protocol kills the sandbox at once (fail closed: a call, if one
// runs, finds the same error; none may be running).
func (c *Client) channelEnded(err error) {
	if c.relay != nil {
		c.relay.mux.Close(fmt.Errorf("%w: the channel to the executor ended: %w", sandbox.ErrExecutor, err))
	}
	select {
	case <-c.done:
		return // Close: not a violation
	default:
	}
	if errors.Is(err, ErrBadMAC) || errors.Is(err, errStreamProtocol) {
		_ = c.kill()
	}
}

// sendStream writes one stream frame, numbered in the request sequence.
func (c *Client) sendStream(f *StreamFrame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nextID++
	frame := streamFrameBytes(c.key, &Request{ID: c.nextID, Op: OpStream, Stream: f})
	return c.write(context.Background(), frame, streamWait)
}
