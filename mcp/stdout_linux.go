package mcp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ClaimStdout reserves the process's stdout for the protocol: it returns a
// new file on the original stdout, and points file descriptor 1 at stderr,
// so that anything else that writes to stdout (a stray print, a library)
// lands in the diagnostics instead of corrupting the protocol.
func ClaimStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(1), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("reserving stdout for the MCP protocol: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pointing stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "mcp-stdout"), nil
}
