package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// caDirPrefix names the per-session CA bundle directories.
const caDirPrefix = "agentbox-ca-"

// maxBundleBytes bounds the image's system CA bundle read into the
// session's.
const maxBundleBytes = 8 << 20

// trustBundle is the CA bundle of a session whose proxy intercepts TLS: a
// file in a private host directory, mounted read-only at
// sandbox.CABundlePath, holding the image's system bundle and the session
// CA. It is written after the container is created (the image's bundle
// is read from it) and before it starts.
type trustBundle struct {
	dir, file string
	pem       []byte
}

// newTrustBundle creates the (empty) bundle file for pem; nil pem: none.
func newTrustBundle(pem []byte) (*trustBundle, error) {
	if len(pem) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", caDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: creating the session CA bundle's directory: %v; check $TMPDIR", sandbox.ErrUnavailable, err)
	}
	b := &trustBundle{dir: dir, file: filepath.Join(dir, "ca-bundle.pem"), pem: pem}
	if err := os.WriteFile(b.file, pem, 0o644); err != nil {
		b.remove()
		return nil, fmt.Errorf("%w: writing the session CA bundle: %v", sandbox.ErrUnavailable, err)
	}
	return b, nil
}

func (b *trustBundle) apply(hc *container.HostConfig) {
	if b != nil {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: b.file, Target: sandbox.CABundlePath, ReadOnly: true})
	}
}

// fill writes the image's system bundle (the first of
// sandbox.SystemBundles the created container has) followed by the
// session CA into the file, in place (the mount follows the inode).
func (b *trustBundle) fill(ctx context.Context, eng Engine, cid string) error {
	if b == nil {
		return nil
	}
	var system []byte
	for _, p := range sandbox.SystemBundles {
		data, err := copyFileOut(ctx, eng, cid, p)
		if err == nil && len(data) > 0 {
			system = data
			break
		}
	}
	f, err := os.OpenFile(b.file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("%w: writing the session CA bundle: %v", sandbox.ErrUnavailable, err)
	}
	defer f.Close()
	if len(system) > 0 && system[len(system)-1] != '\n' {
		system = append(system, '\n')
	}
	if _, err := f.Write(append(system, b.pem...)); err != nil {
		return fmt.Errorf("%w: writing the session CA bundle: %v", sandbox.ErrUnavailable, err)
	}
	return f.Close()
}

// copyFileOut reads one regular file (following one symlink level within
// the tar the engine returns) from a created container.
func copyFileOut(ctx context.Context, eng Engine, cid, path string) ([]byte, error) {
	rc, st, err := eng.CopyFromContainer(ctx, cid, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if st.Mode&os.ModeSymlink != 0 && st.LinkTarget != "" {
		target := st.LinkTarget
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		rc.Close()
		if rc, _, err = eng.CopyFromContainer(ctx, cid, target); err != nil {
			return nil, err
		}
		defer rc.Close()
	}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			return io.ReadAll(io.LimitReader(tr, maxBundleBytes))
		}
	}
}

func (b *trustBundle) remove() {
	if b != nil {
		_ = os.RemoveAll(b.dir)
	}
}
