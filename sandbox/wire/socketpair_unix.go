//go:build unix

package wire

import (
	"net"
	"os"
	"syscall"
)

// socketPair returns the two ends of a connected unix stream socket pair.
func socketPair() (net.Conn, net.Conn, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	a, err := fileConn(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	b, err := fileConn(fds[1])
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// fileConn makes a net.Conn of fd and closes fd (net.FileConn dups it).
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "agentbox-proxy")
	defer f.Close()
	return net.FileConn(f)
}
