package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/xdg"
)

// KeyEnv is the environment variable holding the audit HMAC key.
const KeyEnv = "AGENTBOX_AUDIT_KEY"

// DefaultPath is the audit log used when --audit is not given:
// $XDG_STATE_HOME/agentbox/audit.jsonl, else ~/.local/state/agentbox/audit.jsonl.
func DefaultPath() (string, error) {
	state, err := xdg.StateDir(os.Getenv)
	if err != nil {
		return "", fmt.Errorf("audit: no default log path (%w, or pass --audit FILE)", err)
	}
	return filepath.Join(state, "agentbox", "audit.jsonl"), nil
}

// CheckOutside returns an error if logPath lies inside workspace (the
// directory mounted into the sandbox, where the agent could rewrite it).
// Both paths are made absolute and the symlinks of their longest existing
// prefixes are resolved first.
func CheckOutside(logPath, workspace string) error {
	lp, err := resolve(logPath)
	if err != nil {
		return fmt.Errorf("audit: log path %q: %w", logPath, err)
	}
	ws, err := resolve(workspace)
	if err != nil {
		return fmt.Errorf("audit: workspace %q: %w", workspace, err)
	}
	rel, err := filepath.Rel(ws, lp)
	if err != nil {
		return nil // different volumes: outside
	}
	if rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("audit: log %s is inside the workspace %s, where the sandbox could change it; pass --audit with a path outside the workspace", lp, ws)
	}
	return nil
}

// resolve makes p absolute and resolves the symlinks of its longest existing
// prefix; the missing rest is appended as is.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	cur := abs
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// KeyFromEnv returns the audit HMAC key: the contents of keyFile (trimmed of
// surrounding white space) when keyFile is given — a flag overrides the
// environment — else the raw value of AGENTBOX_AUDIT_KEY; nil if neither is
// set. A key file that group or others can read, or that is empty, is an
// error.
func KeyFromEnv(keyFile string) ([]byte, error) {
	if keyFile != "" {
		fi, err := os.Stat(keyFile)
		if err != nil {
			return nil, fmt.Errorf("audit: key file: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("audit: key file %s is accessible by group or others (mode %04o); run: chmod 600 %s", keyFile, fi.Mode().Perm(), keyFile)
		}
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("audit: key file: %w", err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return nil, fmt.Errorf("audit: key file %s is empty", keyFile)
		}
		return b, nil
	}
	if k := os.Getenv(KeyEnv); k != "" {
		return []byte(k), nil
	}
	return nil, nil
}
