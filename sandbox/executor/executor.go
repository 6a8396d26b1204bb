// Package executor is the in-container side of the sandbox: a small server
// that the static agentbox binary runs as the container's main process
// (`agentbox executor`). It reads framed requests from stdin, runs bash
// commands and file operations in /workspace, and writes authenticated
// responses to stdout. See package wire for the protocol.
//
// Every command runs traced (ptrace): each program it executes is judged at
// its exec stop by the policy's command rules, and after each command the
// workspace is checked for effects the file rules forbid.
package executor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentbox/agentbox/sandbox"

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
	// LoadJudge builds the exec-time judge from the policy sent in hello.
	// A hello with a policy and no LoadJudge is refused: fail closed.
	LoadJudge JudgeLoader

	key     []byte
	keep    bool
	cap     int
	self    int
	ooms    int64 // the cgroup's OOM-kill count after the last call; -1 unknown
	judge   Judge
	ids     *identities       // the image's executables by content (nil: none)
	built   *sandbox.Manifest // the manifest made at hello, returned to the host
	tracer  *tracer
	procs   *procTable // the traced processes, for the proxy's attribution (origin.go)
	pidsMax int
	effects *effects
	link    *link
	xfer    *xfer    // copies of a workspace that lives in the sandbox (copy_linux.go)
	held    stopHold // the processes a sweep is killing (procs_linux.go)

	descendantsOnly bool   // tests on a host: sweep only the executor's descendants
	testRoot        string // tests on a host: the workspace
	taskLimit       int    // tests on a host: the command's task bound
	noTrace         bool   // benchmarks: the same call without exec-time rules
	viaShim         bool   // commands start through the exec shim (gVisor)
	proxyAddr       string // tests on a host: where the channel forwarder listens
	manifestRoot    string // tests on a host: the image root the manifest is made of
}

// dir is the workspace commands run in.
func (s *Server) dir() string {
	if s.testRoot != "" {
		return s.testRoot
	}
	return s.root()
}

// Serve runs the request loop until stdin closes. The first request must be
// hello, which carries the session key and settings.
func (s *Server) Serve(in io.Reader, out io.Writer) error {
	if err := makeNonDumpable(); err != nil {
		return fmt.Errorf("executor: cannot make itself non-dumpable: %w", err)
	}
	s.self = os.Getpid()
	lowerRlimits()
	if err := becomeReaper(); err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	// Every thread the executor needs exists before a command can use up
	// the pids limit.
	prespawnThreads(8)
	s.tracer = newTracer()
	s.procs = newProcTable()
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
	s.key = hello.Key
	s.link = &link{w: w, key: s.key, answers: make(chan wire.Answer, 16), cancels: make(chan uint64, 1), dead: make(chan struct{})}
	if err := s.setup(hello); err != nil {
		_ = s.link.reply(&wire.Response{ID: hello.ID, Error: err.Error()})
		return fmt.Errorf("executor: %w", err)
	}
	if hello.Proxy != "" {
		// network: proxy: 127.0.0.1:3128 inside, carried to the host's
		// proxy over the socket mounted in.
		stop, err := startForwarder(hello.Proxy)
		if err != nil {
			_ = s.link.reply(&wire.Response{ID: hello.ID, Error: err.Error()})
			return fmt.Errorf("executor: %w", err)
		}
		defer stop()
	}
	if hello.ProxyChannel {
		// network: proxy with the connections carried over this channel.
		stop, err := s.startChannelForwarder()
		if err != nil {
			_ = s.link.reply(&wire.Response{ID: hello.ID, Error: err.Error()})
			return fmt.Errorf("executor: %w", err)
		}
		defer stop()
	}
	if err := s.link.reply(&wire.Response{ID: hello.ID, Version: s.Version, Protocol: wire.Protocol, Ifaces: ifaceNames(), Manifest: s.built, CanCancel: true}); err != nil {
		return err
	}
	return s.loop(r, hello)
}

// setup applies the hello's settings.
func (s *Server) setup(hello *wire.Request) error {
	s.keep, s.cap, s.pidsMax = hello.Keep, hello.Cap, hello.PidsMax
	if hello.SetIDFilter {
		// On the executor itself, all its threads: every command it
		// starts inherits it, at no cost per call. The executor never
		// sets a set-id bit (copies and restores carry permission bits
		// only). Fail closed.
		if err := installSetIDFilter(); err != nil {
			return fmt.Errorf("%w; refusing to run without it", err)
		}
	}
	if s.cap <= 0 {
		s.cap = wire.DefaultOutputCap
	}
	s.link.approver = hello.Approver
	if len(hello.Policy) > 0 {
		if s.LoadJudge == nil {
			return errors.New("this executor cannot load the policy's command rules; refusing to run without them")
		}
		j, err := s.LoadJudge(hello.PolicyName, hello.Policy)
		if err != nil {
			return fmt.Errorf("loading the policy's command rules: %w", err)
		}
		s.judge = newCachedJudge(j)
	}
	if err := s.loadManifest(hello); err != nil {
		return err
	}
	if hello.Effects != nil && (len(hello.Effects.Deny) > 0) {
		if s.Match == nil {
			return errors.New("this executor cannot match file rules; refusing to run without the effects check")
		}
	}
	if hello.Staged {
		// The host reads the staging layer after every call: nothing in
		// here can hide a change from it, so no walk here.
		return nil
	}
	e, err := newEffects(s.dir(), hello.Effects, s.Match)
	if err != nil {
		return err
	}
	s.effects = e
	return nil
}

// loop serves requests until stdin closes, a frame is bad, or the host
// falls silent past the hello's deadline; then every process dies.
func (s *Server) loop(r *bufio.Reader, hello *wire.Request) error {
	reqs := make(chan *wire.Request)
	errc := make(chan error, 1)
	go s.link.read(r, hello.ID, reqs, errc)
	stopWatch := s.link.watch(hello.DeadlineMS, func() { s.killAllExcept(nil) })
	defer stopWatch()
	for {
		select {
		case req := <-reqs:
			// Served aside so that the switch still ends Serve when the
			// reply cannot be written (a host that stalled).
			replied := make(chan error, 1)
			go func() {
				resp := s.handle(req)
				resp.ID = req.ID
				replied <- s.link.reply(resp)
			}()
			select {
			case err := <-replied:
				if err != nil {
					s.killAllExcept(nil)
					return err
				}
			case err := <-errc:
				// The host went away mid-call (its end of stdin closed:
				// agentbox was killed): the command dies now, not when
				// the dead man's switch fires. A command still starting
				// did not exist at the first kill: kill until the call
				// ends (bounded: its reply may never be written).
				s.killUntil(replied, 5*time.Second)
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("executor: %w", err)
			case <-s.link.dead:
				return ErrDeadMan
			}
		case err := <-errc:
			s.killAllExcept(nil)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("executor: %w", err)
		case <-s.link.dead:
			return ErrDeadMan
		}
	}
}

// killUntil kills every process until done delivers or d passes.
func (s *Server) killUntil(done <-chan error, d time.Duration) {
	s.killAllExcept(nil)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	limit := time.After(d)
	for {
		select {
		case <-done:
			return
		case <-limit:
			return
		case <-t.C:
			s.killAllExcept(nil)
		}
	}
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
	case wire.OpCopyIn:
		return s.copyIn(req)
	case wire.OpCopyOut:
		return s.copyOut(req)
	default:
		return &wire.Response{Error: fmt.Sprintf("unknown op %q", req.Op)}
	}
}
