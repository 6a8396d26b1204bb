// Package executor is the in-container side of the sandbox: a small server
// that the static agentbox binary runs as the container's main process
// (`agentbox executor`). It reads framed requests from stdin, runs bash
// commands and file operations in /workspace, and writes authenticated
// responses to stdout. See package wire for the protocol.
package executor

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/agentbox/agentbox/sandbox"
	"io"
	"os"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// Workspace is where the host mounts the workspace inside the container:
// the default of Server.Root.
const Workspace = sandbox.WorkspaceDir

// Matcher re-checks a resolved path (relative to the workspace) against the
// file rules sent with a request. It returns whether the path is denied and
// the rule that decided.
type Matcher func(allow, deny []string, rel string, write bool) (denied bool, rule string)

// Server serves requests for one container.
type Server struct {
	Match   Matcher
	Version string
	// Root is the workspace directory: the working directory of commands
	// and the root of file requests ("" = Workspace). Absolute request
	// paths must lie below it.
	Root string
	key  []byte
	keep bool
	cap  int
	self int
	ooms int64 // the cgroup's OOM-kill count after the last call; -1 unknown
}

// Serve runs the request loop until stdin closes. The first request must be
// hello, which carries the session key and settings.
func (s *Server) Serve(in io.Reader, out io.Writer) error {
	if err := makeNonDumpable(); err != nil {
		return fmt.Errorf("executor: cannot make itself non-dumpable: %w", err)
	}
	s.self = os.Getpid()
	s.ooms = oomKills()
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	hello, err := wire.ReadRequest(r, nil)
	if err != nil {
		return fmt.Errorf("executor: reading hello: %w", err)
	}
	if hello.Op != wire.OpHello || len(hello.Key) < 16 {
		return errors.New("executor: first request must be hello with a key")
	}
	s.key, s.keep, s.cap = hello.Key, hello.Keep, hello.Cap
	if s.cap <= 0 {
		s.cap = wire.DefaultOutputCap
	}
	if err := s.reply(w, &wire.Response{ID: hello.ID, Version: s.Version}); err != nil {
		return err
	}
	last := hello.ID
	for {
		req, err := wire.ReadRequest(r, s.key)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// Forged or corrupted: stop serving; the host fails closed.
			return fmt.Errorf("executor: %w", err)
		}
		if req.ID != last+1 {
			return fmt.Errorf("executor: request id %d out of sequence (want %d)", req.ID, last+1)
		}
		last = req.ID
		resp := s.handle(req)
		resp.ID = req.ID
		if err := s.reply(w, resp); err != nil {
			return err
		}
	}
}

func (s *Server) reply(w *bufio.Writer, resp *wire.Response) error {
	if err := wire.WriteResponse(w, s.key, resp); err != nil {
		return fmt.Errorf("executor: writing response: %w", err)
	}
	return w.Flush()
}

// root is the workspace directory.
func (s *Server) root() string {
	if s.Root != "" {
		return s.Root
	}
	return Workspace
}

func (s *Server) handle(req *wire.Request) *wire.Response {
	switch req.Op {
	case wire.OpExec:
		return s.exec(req)
	case wire.OpRead:
		return s.readFile(req)
	case wire.OpWrite:
		return s.writeFile(req)
	default:
		return &wire.Response{Error: fmt.Sprintf("unknown op %q", req.Op)}
	}
}
