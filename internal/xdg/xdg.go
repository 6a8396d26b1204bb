// Package xdg finds agentbox's per-user directories (XDG base directories).
package xdg

import (
	"errors"
	"path/filepath"
)

// StateDir is $XDG_STATE_HOME when it is an absolute path, else
// $HOME/.local/state. getenv is os.Getenv, or a fake in tests.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("neither XDG_STATE_HOME nor HOME is set; set one")
	}
	return filepath.Join(home, ".local", "state"), nil
}
