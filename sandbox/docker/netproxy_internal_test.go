package docker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
)

func TestRemoveProxyDir(t *testing.T) {
	root := t.TempDir()
	ours := filepath.Join(root, proxyDirPrefix+"123")
	other := filepath.Join(root, "precious")
	for _, d := range []string{ours, other} {
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, "proxy.sock"), nil, 0o600)
	}
	removeProxyDir([]container.MountPoint{
		{Destination: sandbox.ProxySocket, Source: filepath.Join(other, "proxy.sock")},
		{Destination: "/workspace", Source: ours + "/proxy.sock"},
	})
	if _, err := os.Stat(ours); err != nil {
		t.Fatal("removed a directory mounted elsewhere")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("removed a directory without agentbox's name")
	}
	removeProxyDir([]container.MountPoint{{Destination: sandbox.ProxySocket, Source: filepath.Join(ours, "proxy.sock")}})
	if _, err := os.Stat(ours); !os.IsNotExist(err) {
		t.Errorf("socket directory left: %v", err)
	}
}

func TestRemoveCABundleDir(t *testing.T) {
	root := t.TempDir()
	ours := filepath.Join(root, caDirPrefix+"123")
	other := filepath.Join(root, "precious")
	for _, d := range []string{ours, other} {
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, "ca-bundle.pem"), nil, 0o600)
	}
	removeProxyDir([]container.MountPoint{
		{Destination: sandbox.CABundlePath, Source: filepath.Join(other, "ca-bundle.pem")},
		{Destination: "/workspace", Source: filepath.Join(ours, "ca-bundle.pem")},
	})
	if _, err := os.Stat(ours); err != nil {
		t.Fatal("removed a directory mounted elsewhere")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("removed a directory without agentbox's name")
	}
	removeProxyDir([]container.MountPoint{{Destination: sandbox.CABundlePath, Source: filepath.Join(ours, "ca-bundle.pem")}})
	if _, err := os.Stat(ours); !os.IsNotExist(err) {
		t.Errorf("CA bundle directory left: %v", err)
	}
}
