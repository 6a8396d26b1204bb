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

// writeTrustBundle writes the session's CA bundle at sandbox.CABundlePath
// when the host passed the session CA in sandbox.TrustPEMEnv (the
// kubernetes backend): the image's system bundle (the first of
// sandbox.SystemBundles found) followed by the session CA, read-only. A
// no-op without the variable. Fails closed: a session whose proxy
// intercepts TLS does not run without its bundle.
func writeTrustBundle() error {
	return writeTrustBundleAt(sandbox.CABundlePath, sandbox.SystemBundles, os.Getenv(sandbox.TrustPEMEnv))
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
