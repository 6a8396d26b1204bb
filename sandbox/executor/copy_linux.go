package executor

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/agentbox/agentbox/sandbox/transfer"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// xfer is the state of the workspace copies of a sandbox that mounts
// nothing from the host: the copy-in being unpacked, the tree's state at
// the last copy, and the change stream being sent.
type xfer struct {
	in     *io.PipeWriter
	inDone chan inResult
	base   transfer.Snap
	out    *io.PipeReader
	outEnd chan outResult
}

type inResult struct {
	rep transfer.Report
	err error
}

type outResult struct {
	next transfer.Snap
	st   transfer.Stats
	err  error
}

var errAborted = errors.New("a new copy started")

// copyIn unpacks one chunk of the workspace's tar stream; after the last,
// it records the tree's state (the base of the changes sent back) and
// restarts the effects check on the tree it now guards.
func (s *Server) copyIn(req *wire.Request) *wire.Response {
	if req.Copy == nil {
		return &wire.Response{Error: "copy_in without data"}
	}
	x := s.xferState()
	if x.in == nil {
		root, err := os.OpenRoot(s.dir())
		if err != nil {
			return &wire.Response{Error: fmt.Sprintf("opening the workspace: %v", err)}
		}
		pr, pw := io.Pipe()
		done := make(chan inResult, 1)
		limit := req.Copy.Limit
		go func() {
			defer root.Close()
			rep, err := transfer.Apply(root, pr, transfer.ApplyOptions{MaxBytes: limit})
			if err != nil {
				pr.CloseWithError(err)
			} else {
				_, _ = io.Copy(io.Discard, pr) // the tar's padding
			}
			done <- inResult{rep, err}
		}()
		x.in, x.inDone = pw, done
	}
	if _, err := x.in.Write(req.Copy.Data); err != nil {
		x.in.CloseWithError(err)
		res := <-x.inDone
		x.in = nil
		return &wire.Response{Error: fmt.Sprintf("unpacking the workspace: %v", res.err)}
	}
	if !req.Copy.Done {
		return &wire.Response{}
	}
	_ = x.in.Close()
	res := <-x.inDone
	x.in = nil
	if res.err != nil {
		return &wire.Response{Error: fmt.Sprintf("unpacking the workspace: %v", res.err)}
	}
	base, err := transfer.Snapshot(s.dir(), 0)
	if err != nil {
		return &wire.Response{Error: fmt.Sprintf("recording the workspace: %v", err)}
	}
	x.base = base
	if s.effects != nil {
		e, err := newEffects(s.effects.root, &wire.Rules{Deny: s.effects.deny}, s.effects.match)
		if err != nil {
			return &wire.Response{Error: fmt.Sprintf("recording the workspace: %v", err)}
		}
		s.effects = e
	}
	r := res.rep
	return &wire.Response{Copy: &wire.CopyResp{Entries: r.Files + r.Dirs + r.Links, Bytes: r.Bytes}}
}

// copyOut sends the next chunk of the tar stream of changes since the last
// copy; Start begins a new one.
func (s *Server) copyOut(req *wire.Request) *wire.Response {
	if req.Copy == nil {
		return &wire.Response{Error: "copy_out without parameters"}
	}
	x := s.xferState()
	if req.Copy.Start {
		if x.out != nil {
			x.out.CloseWithError(errAborted)
			<-x.outEnd
		}
		pr, pw := io.Pipe()
		end := make(chan outResult, 1)
		base, dir, limit := x.base, s.dir(), req.Copy.Limit
		go func() {
			next, st, err := transfer.PackChanges(pw, dir, base, limit, 0)
			pw.CloseWithError(err)
			end <- outResult{next, st, err}
		}()
		x.out, x.outEnd = pr, end
	}
	if x.out == nil {
		return &wire.Response{Error: "copy_out: no change set started"}
	}
	buf := make([]byte, wire.CopyChunk)
	n, err := io.ReadFull(x.out, buf)
	if err == nil {
		return &wire.Response{Copy: &wire.CopyResp{Data: buf[:n]}}
	}
	x.out = nil
	res := <-x.outEnd
	if res.err != nil || (err != io.EOF && err != io.ErrUnexpectedEOF) {
		return &wire.Response{Error: fmt.Sprintf("packing the changes: %v", errors.Join(res.err, ignoreEOF(err)))}
	}
	x.base = res.next
	return &wire.Response{Copy: &wire.CopyResp{Data: buf[:n], Done: true, Entries: res.st.Entries, Bytes: res.st.Bytes}}
}

func ignoreEOF(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil
	}
	return err
}

func (s *Server) xferState() *xfer {
	if s.xfer == nil {
		s.xfer = &xfer{}
	}
	return s.xfer
}

// ifaceNames lists the sandbox's network interfaces for the hello answer.
func ifaceNames() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return []string{"unknown: " + err.Error()}
	}
	names := make([]string, 0, len(ifs))
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return names
}
