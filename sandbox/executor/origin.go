package executor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// procTable is what the tracer saw of the sandbox's processes: each
// traced process's parent and the argv it was executed with (read at the
// exec stop, before the program ran an instruction, so a program cannot
// rewrite it as it can its /proc/PID/cmdline). The proxy forwarder reads
// it to attribute a connection to the process tree that opened it.
type procTable struct {
	mu    sync.Mutex
	procs map[int]procEntry
}

type procEntry struct {
	parent int
	argv   []string // argv[0] is the file executed when argv[0] named another
}

func newProcTable() *procTable { return &procTable{procs: map[int]procEntry{}} }

// fork records child as parent's, running parent's program.
func (t *procTable) fork(parent, child int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.procs[child] = procEntry{parent: parent, argv: t.procs[parent].argv}
}

// exec records what pid now runs.
func (t *procTable) exec(pid int, argv []string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.procs[pid]
	e.argv = argv
	t.procs[pid] = e
}

func (t *procTable) exit(pid int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.procs, pid)
}

// Bounds of what an origin carries of each argv.
const (
	maxChain    = 64
	maxArgs     = 32
	maxArgBytes = 512
)

// chain is pid's program and those of its traced ancestors, nearest
// first; nil when the tracer never saw pid.
func (t *procTable) chain(pid int) [][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]string
	for len(out) < maxChain {
		e, ok := t.procs[pid]
		if !ok {
			break
		}
		argv := e.argv
		if len(argv) > maxArgs {
			argv = argv[:maxArgs]
		}
		clipped := make([]string, len(argv))
		for i, a := range argv {
			clipped[i] = a[:min(len(a), maxArgBytes)]
		}
		out = append(out, clipped)
		pid = e.parent
	}
	return out
}

// originLine is the first line the forwarder sends on a proxied stream
// (sandbox.OriginPrefix): the processes holding the client's socket, each
// with its program chain, or why none could be found.
func (s *Server) originLine(c net.Conn) []byte {
	// The tracer records a fork when it handles the event, which can lag
	// behind the kernel under load: a just-forked holder (head, forked by
	// bash, before its exec) has no chain yet. Look again for a moment
	// before calling a holder untraced; an untraced one stays so.
	var o sandbox.Origin
	for deadline := time.Now().Add(originSettle); ; time.Sleep(20 * time.Millisecond) {
		var settled bool
		o, settled = s.origin(c)
		if settled || time.Now().After(deadline) {
			break
		}
	}
	b, _ := json.Marshal(o)
	return append(append([]byte(sandbox.OriginPrefix), b...), '\n')
}

// originSettle bounds how long originLine waits for the tracer to record
// a holder's fork or exec.
const originSettle = 500 * time.Millisecond

// origin is one look at the processes holding c's client end; settled is
// false when a holder has no chain yet (its fork may not be recorded).
func (s *Server) origin(c net.Conn) (o sandbox.Origin, settled bool) {
	pids, err := socketOwners(c)
	switch {
	case err != nil:
		o.Error = err.Error()
	case len(pids) == 0:
		o.Error = "no process holds the connection's socket"
	}
	if err != nil {
		return o, true
	}
	for _, pid := range pids {
		ch := s.procs.chain(pid)
		if len(ch) == 0 {
			o.Error = fmt.Sprintf("process %d holds the connection but was not started by a traced call", pid)
			o.Holders = nil
			return o, false
		}
		o.Holders = append(o.Holders, sandbox.OriginProcess{PID: pid, Chain: ch})
	}
	return o, true
}

// socketOwners finds the processes that hold the client end of c, an
// accepted loopback TCP connection: its inode in /proc/net/tcp, then the
// fds in /proc/*/fd that point at it.
func socketOwners(c net.Conn) ([]int, error) {
	ra, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return nil, fmt.Errorf("the client's address: %w", err)
	}
	la, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return nil, fmt.Errorf("the forwarder's address: %w", err)
	}
	inode, err := tcpInode(ra, la)
	if err != nil {
		return nil, err
	}
	want := "socket:[" + inode + "]"
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + d.Name() + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/" + d.Name() + "/fd/" + fd.Name()); l == want {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// tcpInode is the inode of the IPv4 socket local→remote in /proc/net/tcp.
func tcpInode(local, remote netip.AddrPort) (string, error) {
	if !local.Addr().Is4() || !remote.Addr().Is4() {
		return "", errors.New("not an IPv4 loopback connection")
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	l, r := procAddr(local), procAddr(remote)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == l && fs[2] == r {
			return fs[9], nil
		}
	}
	return "", fmt.Errorf("the connection from %s is not in /proc/net/tcp", local)
}

// procAddr spells a as /proc/net/tcp does: the address as a native-endian
// (little-endian here) 32-bit hex word, the port in hex.
func procAddr(a netip.AddrPort) string {
	b := a.Addr().As4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
}
