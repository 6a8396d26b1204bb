package sandbox

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// ExecutorBinary returns the absolute path of the static binary to mount as
// the executor: path if given, else the running executable. It refuses a
// dynamically linked binary, which could not run inside an arbitrary image.
func ExecutorBinary(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("%w: cannot find the agentbox binary: %w", ErrUnavailable, err)
		}
		path = exe
	}
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%w: executor binary: %w", ErrUnavailable, err)
	}
	if err := CheckStatic(path); err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// CheckStatic returns an error unless path is a statically linked Linux ELF
// executable (no program interpreter).
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Linux executable (%w); build agentbox for linux with CGO_ENABLED=0 (make build)", ErrUnavailable, path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s is dynamically linked and cannot run inside the sandbox; rebuild with CGO_ENABLED=0 (make build)", ErrUnavailable, path)
		}
	}
	return nil
}
