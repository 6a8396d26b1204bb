package executor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/sandbox"
)

// maxBundleBytes bounds the image's system CA bundle read into the
// session's.
const maxBundleBytes = 8 << 20

// WriteTrustBundle writes the session's CA bundle at sandbox.CABundlePath
// from the session CA in sandbox.TrustPEMEnv: the image's system bundle
// (the first of sandbox.SystemBundles found) followed by the session CA.
// The kubernetes backend runs it as the pod's init container, whose
// directory the sandbox's container mounts read-only. Fails closed: no
// PEM, or a bundle it cannot write, is an error.
func WriteTrustBundle() error {
	pem := os.Getenv(sandbox.TrustPEMEnv)
	if pem == "" {
		return fmt.Errorf("no session CA in %s: nothing to write (internal: the kubernetes backend sets it on the init container)", sandbox.TrustPEMEnv)
	}
	return writeTrustBundleAt(sandbox.CABundlePath, sandbox.SystemBundles, pem)
}

func writeTrustBundleAt(dst string, systems []string, pem string) error {
	if pem == "" {
		return nil
	}
	var bundle []byte
	for _, p := range systems {
		if data, err := readBounded(p); err == nil && len(data) > 0 {
			bundle = data
			break
		}
	}
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, pem...)
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".ca-bundle-*")
	if err != nil {
		return fmt.Errorf("writing the session CA bundle at %s: %w; the pod needs its writable %s volume (refusing to run commands that would not trust the session CA)", dst, err, filepath.Dir(dst))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(bundle); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the session CA bundle at %s: %w", dst, err)
	}
	if err := tmp.Chmod(0o444); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the session CA bundle at %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the session CA bundle at %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("writing the session CA bundle at %s: %w", dst, err)
	}
	return nil
}

// readBounded reads a regular file (following symlinks) up to
// maxBundleBytes.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxBundleBytes))
}
