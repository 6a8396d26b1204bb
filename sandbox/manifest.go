package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Manifest lists an image's executables, so that the exec-time layer
// knows a program by what it is, not by what it is called: a copy or link
// of python3 under any name has python3's size and sha256. It is
// made by the executor on an image's first use, before any command runs,
// and cached on the host per image id (see LoadManifest); the executor
// gets it in every hello after that.
type Manifest struct {
	// Image is the id of the image it was made from ("" when unknown).
	Image string `json:"image,omitempty"`
	// Version is the manifest format (ManifestVersion); a cached manifest
	// of another version is made again.
	Version  int               `json:"version,omitempty"`
	Programs []ManifestProgram `json:"programs"`
}

// ManifestVersion is the manifest format executors make: 2 groups the
// files of a toolchain (Toolchain, Driver).
const ManifestVersion = 2

// ManifestProgram is one executable file of an image. Its content is
// compared by sha256 with a file the session executes that has the same
// size; SHA256 is set when known in advance, otherwise the executor hashes
// the image's file the first time a candidate of that size runs (the
// image's root is read-only, so the file is as the manifest found it).
type ManifestProgram struct {
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size"`
	// Paths are the file's path, then every symbolic link in the image
	// that resolves to it (/usr/bin/python3 → python3.11): each basename
	// is a name the program is known by.
	Paths []string `json:"paths"`
	// Toolchain names the toolchain the file belongs to ("go": the go
	// command and its GOROOT/pkg/tool; "gcc": the compiler drivers, their
	// GCC-internal programs and the assembler and linker), "" for none.
	// What a toolchain's Driver runs of its own files is judged as part of
	// the command that ran the driver.
	Toolchain string `json:"toolchain,omitempty"`
	Driver    bool   `json:"driver,omitempty"`
}

// ManifestDir is where manifests are cached: $AGENTBOX_MANIFEST_DIR (a
// cache several users or CI jobs may share), else
// $XDG_STATE_HOME/agentbox/manifests, else ~/.local/state/agentbox/manifests.
func ManifestDir() (string, error) {
	if d := os.Getenv("AGENTBOX_MANIFEST_DIR"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return "", fmt.Errorf("%w: neither XDG_STATE_HOME nor HOME is set; set one to say where image manifests are cached", ErrConfig)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "agentbox", "manifests"), nil
}

// manifestFile is the cache file of image id in dir; ids are the engine's
// ("sha256:<hex>"), anything else is refused.
func manifestFile(dir, image string) (string, error) {
	hex, ok := strings.CutPrefix(image, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("image id %q is not sha256:<hex>", image)
	}
	return filepath.Join(dir, "sha256-"+hex+".json"), nil
}

// LoadManifest reads the cached manifest of image id from dir; nil, nil
// when there is none yet.
func LoadManifest(dir, image string) (*Manifest, error) {
	name, err := manifestFile(dir, image)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the image manifest %s: %w", name, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Image != image || m.Version != ManifestVersion {
		// A damaged or older cache is made again, never trusted.
		return nil, nil
	}
	return &m, nil
}

// SaveManifest caches m (made from image m.Image) in dir, atomically.
func SaveManifest(dir string, m *Manifest) error {
	name, err := manifestFile(dir, m.Image)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("caching the image manifest: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".manifest-*")
	if err != nil {
		return fmt.Errorf("caching the image manifest: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("caching the image manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("caching the image manifest: %w", err)
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return fmt.Errorf("caching the image manifest: %w", err)
	}
	return nil
}
