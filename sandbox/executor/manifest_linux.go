package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// Bounds of the manifest an executor makes: files hashed, and the size of
// one file (a larger executable is left out, so known only by name and
// judged as not part of the image).
const (
	maxManifestFiles = 20000
	maxHashedSize    = 512 << 20
)

// buildManifest lists the executables of the image mounted at root: every
// regular file with an execute bit on root's own filesystem (so neither
// /proc, /sys, /dev, /tmp, the workspace nor the executor's own mount),
// with its size and the symbolic links that resolve to it, grouped by
// toolchain (see toolchains.go). It runs at
// hello, before any command of the session, so the image is as it was
// built. Contents are hashed later, and only when needed (see
// identities): reading every executable at a session's start took 3.5 s
// on fuse-overlayfs, listing them takes a fraction of that.
func buildManifest(root string) (*sandbox.Manifest, error) {
	var rootSt syscall.Stat_t
	if err := syscall.Stat(root, &rootSt); err != nil {
		return nil, err
	}
	byPath := map[string]*sandbox.ManifestProgram{}
	var links []string
	var order []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || uint64(st.Dev) != uint64(rootSt.Dev) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			links = append(links, p)
		case d.Type().IsRegular() && st.Mode&0o111 != 0 && st.Size <= maxHashedSize && len(byPath) < maxManifestFiles:
			byPath[p] = &sandbox.ManifestProgram{Size: st.Size, Paths: []string{p}}
			order = append(order, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if t, err := filepath.EvalSymlinks(l); err == nil {
			if e := byPath[t]; e != nil {
				e.Paths = append(e.Paths, l)
			}
		}
	}
	m := &sandbox.Manifest{Version: sandbox.ManifestVersion, Programs: make([]sandbox.ManifestProgram, 0, len(order))}
	for _, p := range order {
		m.Programs = append(m.Programs, *byPath[p])
	}
	groupToolchains(m)
	return m, nil
}

func hashFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxHashedSize+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// programNames are the names a manifest entry is known by: the basenames
// of its file and links, without repeats.
func programNames(e *sandbox.ManifestProgram) []string {
	var names []string
	for _, p := range e.Paths {
		if n := filepath.Base(p); !slices.Contains(names, n) && !strings.ContainsRune(n, 0) {
			names = append(names, n)
		}
	}
	return names
}

// loadManifest takes the image's manifest from hello, or makes it when the
// host asks (the image's first use), before any command runs.
func (s *Server) loadManifest(hello *wire.Request) error {
	m := hello.Manifest
	root := s.manifestRoot
	if root == "" {
		root = "/"
	}
	if m == nil && hello.BuildManifest {
		var err error
		if m, err = buildManifest(root); err != nil {
			return fmt.Errorf("making the image's manifest of executables: %w", err)
		}
		s.built = m
	}
	if m != nil {
		s.ids = newIdentities(m, root)
	}
	return nil
}
