package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/mount"
)

// fileMasks is what the kernel-level file rules add to one session: the
// mounts, and the per-session host directory holding the empty file and
// directory mounted over hidden paths (removed at Close).
type fileMasks struct {
	dir     string
	mounts  []mount.Mount
	entries []maskEntry
}

// maskDirPrefix names the per-session host directory (in os.TempDir) so
// that gc can remove one left behind.
const maskDirPrefix = "agentbox-masks-"

// prepareMasks plans the masks of cfg's deny globs over its workspace and
// creates the empties they need. The host files are never touched.
func prepareMasks(ctx context.Context, cfg sandbox.Config, id string) (*fileMasks, error) {
	writeDeny := cfg.WriteDeny
	if cfg.WorkspaceMode == sandbox.WorkspaceRO {
		writeDeny = nil // the whole workspace is read-only already
	}
	if cfg.Overlay != nil && cfg.Overlay.Staged {
		writeDeny = nil // decided on the host when the changes are promoted
	}
	entries, err := planMasks(ctx, cfg.Workspace, cfg.ReadDeny, writeDeny, !sameUser(cfg.User))
	if err != nil {
		return nil, err
	}
	m := &fileMasks{entries: entries}
	if len(entries) == 0 {
		return m, nil
	}
	if err := m.mkdir(id); err != nil {
		return nil, err
	}
	dir := m.dir
	emptyFile, emptyDir := filepath.Join(dir, "file"), filepath.Join(dir, "dir")
	if err := os.WriteFile(emptyFile, nil, 0o444); err != nil {
		m.remove()
		return nil, fmt.Errorf("%w: creating the empty mask file: %v", sandbox.ErrConfig, err)
	}
	if err := os.Mkdir(emptyDir, 0o555); err != nil {
		m.remove()
		return nil, fmt.Errorf("%w: creating the empty mask directory: %v", sandbox.ErrConfig, err)
	}
	for _, e := range entries {
		target := sandbox.WorkspaceDir + "/" + e.rel
		src := filepath.Join(cfg.Workspace, filepath.FromSlash(e.rel))
		if e.kind == maskHidden {
			src = emptyFile
			if e.dir {
				src = emptyDir
			}
		}
		m.mounts = append(m.mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: target, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return m, nil
}

// mkdir creates the session's host directory once.
func (m *fileMasks) mkdir(id string) error {
	if m.dir != "" {
		return nil
	}
	dir, err := os.MkdirTemp("", maskDirPrefix+id[:12]+"-")
	if err != nil {
		return fmt.Errorf("%w: creating the directory of file masks: %v; check TMPDIR", sandbox.ErrConfig, err)
	}
	m.dir = dir
	return nil
}

// file writes a file of the session's own (e.g. the seccomp profile for an
// engine that takes it as a path) into its host directory, removed with
// it at Close.
func (m *fileMasks) file(id, name string, data []byte) (string, error) {
	if err := m.mkdir(id); err != nil {
		return "", err
	}
	p := filepath.Join(m.dir, name)
	if err := os.WriteFile(p, data, 0o444); err != nil {
		return "", fmt.Errorf("%w: writing %s: %v", sandbox.ErrConfig, name, err)
	}
	return p, nil
}

// remove deletes the host directory of empties; safe on nil and twice.
func (m *fileMasks) remove() {
	if m == nil || m.dir == "" {
		return
	}
	_ = os.RemoveAll(m.dir)
	m.dir = ""
}

// sameUser reports whether the sandbox runs as the user this process runs
// as (or this process is root): then what the planner cannot read, the
// sandbox cannot read either.
func sameUser(user string) bool {
	if os.Geteuid() == 0 {
		return true
	}
	uid, _, _ := strings.Cut(user, ":")
	return uid == strconv.Itoa(os.Geteuid())
}

// removeMaskDirs removes the mask directories of the given sessions left
// in os.TempDir by a process that died (gc).
func removeMaskDirs(sessions []string) {
	for _, id := range sessions {
		if len(id) < 12 {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(os.TempDir(), maskDirPrefix+id[:12]+"-*"))
		for _, d := range matches {
			_ = os.RemoveAll(d)
		}
	}
}
