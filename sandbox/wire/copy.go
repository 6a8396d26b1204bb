package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Ops of a sandbox that mounts nothing from the host (Kubernetes): the
// workspace is copied in over the channel, and what changed comes back.
const (
	// OpCopyIn carries one chunk of the workspace's tar stream (package
	// sandbox/transfer); Copy.Done marks the last one, whose answer says
	// what was unpacked. The executor then records the tree's state.
	OpCopyIn = "copy_in"
	// OpCopyOut asks for the next chunk of the tar stream of changes since
	// the last copy (Copy.Start begins a new change set); the answer with
	// Copy.Done is the last chunk.
	OpCopyOut = "copy_out"
)

// CopyChunk is the tar bytes one copy frame carries (base64 inflates it by
// 4/3, well inside MaxFrame).
const CopyChunk = 8 << 20

// copyWait bounds one chunk's round trip.
const copyWait = 2 * time.Minute

// CopyReq is the copy part of a request.
type CopyReq struct {
	Data  []byte `json:"data,omitempty"`
	Done  bool   `json:"done,omitempty"`  // copy_in: the last chunk
	Start bool   `json:"start,omitempty"` // copy_out: a new change set
	// Limit bounds the content bytes unpacked (copy_in) or sent back
	// (copy_out); 0 = no bound.
	Limit int64 `json:"limit,omitempty"`
}

// CopyResp is the copy part of a response.
type CopyResp struct {
	Data    []byte `json:"data,omitempty"`
	Done    bool   `json:"done,omitempty"`
	Entries int    `json:"entries,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
}

// CopyIn sends the tar stream r into the workspace, in chunks. limit bounds
// the content bytes the executor unpacks (0 = none).
func (c *Client) CopyIn(ctx context.Context, r io.Reader, limit int64) (CopyResp, error) {
	buf := make([]byte, CopyChunk)
	for {
		n, rerr := io.ReadFull(r, buf)
		done := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !done {
			return CopyResp{}, fmt.Errorf("reading the workspace to send: %w", rerr)
		}
		resp, err := c.roundTrip(ctx, &Request{Op: OpCopyIn, Copy: &CopyReq{Data: buf[:n], Done: done, Limit: limit}}, copyWait)
		if err != nil {
			return CopyResp{}, err
		}
		if resp.Error != "" {
			return CopyResp{}, fmt.Errorf("%w: copying the workspace in: %s", sandbox.ErrExecutor, resp.Error)
		}
		if done {
			if resp.Copy == nil {
				return CopyResp{}, fmt.Errorf("%w: copy_in answered without a summary", sandbox.ErrExecutor)
			}
			return *resp.Copy, nil
		}
	}
}

// ErrCopyOut wraps an error of the stream's consumer (w in CopyOut).
var ErrCopyOut = errors.New("receiving the changes")

// CopyOut writes the tar stream of what changed in the workspace since the
// last copy to w. limit bounds its content bytes (0 = none).
func (c *Client) CopyOut(ctx context.Context, w io.Writer, limit int64) (CopyResp, error) {
	req := &CopyReq{Start: true, Limit: limit}
	var total CopyResp
	for {
		resp, err := c.roundTrip(ctx, &Request{Op: OpCopyOut, Copy: req}, copyWait)
		if err != nil {
			return total, err
		}
		if resp.Error != "" {
			return total, fmt.Errorf("%w: copying the changes out: %s", sandbox.ErrExecutor, resp.Error)
		}
		if resp.Copy == nil {
			return total, fmt.Errorf("%w: copy_out answered without data", sandbox.ErrExecutor)
		}
		if _, err := w.Write(resp.Copy.Data); err != nil {
			return total, fmt.Errorf("%w: %w", ErrCopyOut, err)
		}
		total.Bytes += int64(len(resp.Copy.Data))
		if resp.Copy.Done {
			total.Entries = resp.Copy.Entries
			return total, nil
		}
		req = &CopyReq{}
	}
}
