package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// ResolveWorkspace checks that dir is a directory that may be mounted as the
// workspace and returns its absolute path with symlinks resolved.
func ResolveWorkspace(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no workspace directory given; pass --workspace DIR", ErrConfig)
	}
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s: %w", ErrConfig, dir, err)
	}
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return "", fmt.Errorf("%w: workspace %s does not exist; create it or pass --workspace DIR", ErrConfig, dir)
	}
	fi, err := os.Stat(ws)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: workspace %s is not a directory; pass --workspace DIR", ErrConfig, dir)
	}
	if ws == "/" {
		return "", fmt.Errorf("%w: refusing to mount / as the workspace; pass --workspace DIR", ErrConfig)
	}
	return ws, nil
}
