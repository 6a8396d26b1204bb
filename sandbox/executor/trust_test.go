package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The bundle is the first system bundle found followed by the session CA,
// read-only; no PEM, no file; an unwritable directory fails closed.
func TestWriteTrustBundle(t *testing.T) {
	dir := t.TempDir()
	sys := filepath.Join(dir, "system.crt")
	if err := os.WriteFile(sys, []byte("SYSTEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "ca-bundle.pem")
	if err := writeTrustBundleAt(dst, []string{filepath.Join(dir, "absent"), sys}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("no PEM wrote a bundle: %v", err)
	}
	if err := writeTrustBundleAt(dst, []string{filepath.Join(dir, "absent"), sys}, "SESSION CA\n"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "SYSTEM\nSESSION CA\n" {
		t.Fatalf("bundle %q", data)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v, want read-only", st.Mode())
	}
	err = writeTrustBundleAt(filepath.Join(dir, "missing", "ca-bundle.pem"), []string{sys}, "SESSION CA\n")
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("unwritable directory: %v", err)
	}
	t.Setenv("AGENTBOX_TRUST_PEM", "")
	if err := WriteTrustBundle(); err == nil {
		t.Fatal("no PEM: want an error")
	}
}
