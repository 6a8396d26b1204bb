package workspace

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/sandbox"
)

// Resolve checks that dir is a directory that may be mounted as the
// workspace and returns its absolute path with symlinks resolved.
func Resolve(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no workspace directory given; pass --workspace DIR", sandbox.ErrConfig)
	}
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s: %w", sandbox.ErrConfig, dir, err)
	}
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return "", fmt.Errorf("%w: workspace %s does not exist; create it or pass --workspace DIR", sandbox.ErrConfig, dir)
	}
	fi, err := os.Stat(ws)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: workspace %s is not a directory; pass --workspace DIR", sandbox.ErrConfig, dir)
	}
	if ws == "/" {
		return "", fmt.Errorf("%w: refusing to mount / as the workspace; pass --workspace DIR", sandbox.ErrConfig)
	}
	return ws, nil
}
